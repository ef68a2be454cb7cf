"""Flux's drift correction, the analogue of Argo CD self-heal: the advice for autoscaler-owned fields
of an object that a Flux ``Kustomization`` or ``HelmRelease`` deploys (docs/flux.md).

Pure: the deployer's document (analysed with the objects it renders, as an Application's is) and
the object in, a plain advice mapping out. What depends on the Flux version lives in
:data:`RULES`, here and nowhere else.

Why the advice differs by kind (read from upstream, fluxcd/kustomize-controller 186fb3b):

* kustomize-controller re-applies every object with server-side apply at each interval and on
  drift (docs/spec/v1/kustomizations.md "Controlling the apply behavior": the default ``ssa``
  policy ``Override`` reverts changes made by others). The Ray autoscaler writes a RayCluster's
  ``workerGroupSpecs[].replicas`` and ``scaleStrategy``: for a standalone RayCluster Flux and the
  autoscaler fight over them. ``spec.ignore`` (kustomize-controller v1.9.0, api/v1/
  kustomization_types.go:208; the apply keeps the in-cluster value of an ignored path it alone
  owns, "Adopt", or drops it when another applier owns it, "Strip") takes exactly these paths out
  of Flux's hands and leaves every other Git edit applied: that is the advice. The
  ``kustomize.toolkit.fluxcd.io/ssa`` annotation is not advised for it: ``Merge`` keeps only
  fields Git does not set (replicas is set), ``IfNotPresent`` applies the object only when it does
  not exist (every later Git edit to the RayCluster, an image bump included, is then never
  applied), ``Ignore`` never applies it (kustomization_controller.go:859-866).
* For a RayService the autoscaler scales the RayCluster KubeRay made, not the RayService, and
  KubeRay leaves the replicas out of the cluster hash (diffing/rayservice/rules.py): Flux
  re-applying the RayService resets nothing the autoscaler wrote. The Git edit just does not
  reach the running cluster. No ignore rule and no annotation is needed (``IfNotPresent`` would
  stop serve-config and image edits too); the advice is to keep the value in Git equal to what
  should apply to the next cluster.
* helm-controller corrects drift only when ``spec.driftDetection.mode`` is ``enabled``
  (api/v2/helmrelease_types.go:270-346, default ``disabled``); its ``ignore`` rules take JSON
  pointer ``paths`` and a ``target``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from diffing.hints import Any

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"

# Version-specific Flux rules, in one place.
RULES: Mapping[str, Mapping[str, str]] = {
    "kustomization-ignore": {
        "field": "spec.ignore",
        "since": "kustomize-controller v1.9.0",
        "cite": "fluxcd/kustomize-controller api/v1/kustomization_types.go:208 (fe4a1da, tag api/v1.9.0)",
    },
    "helmrelease-drift-ignore": {
        "field": "spec.driftDetection.ignore",
        "since": "helm-controller v2 API (helm.toolkit.fluxcd.io/v2beta2 and v2)",
        "cite": "fluxcd/helm-controller api/v2/helmrelease_types.go:303-331",
    },
    "ssa-annotation": {
        "key": "kustomize.toolkit.fluxcd.io/ssa",
        "values": "Override (default), Merge, IfNotPresent, Ignore",
        "cite": "fluxcd/kustomize-controller api/v1/kustomization_types.go:31-35, "
                "internal/controller/kustomization_controller.go:859-866",
    },
    "prune-exclusions": {
        f"{KUSTOMIZE_GROUP}/prune": "disabled",
        f"{KUSTOMIZE_GROUP}/reconcile": "disabled",
        f"{KUSTOMIZE_GROUP}/ssa": "Ignore",
        "cite": "fluxcd/kustomize-controller internal/controller/kustomization_controller.go:1101, 1408-1414",
    },
    "helm-keep": {
        "key": "helm.sh/resource-policy",
        "cite": "helm v3.21.4 pkg/kube/client.go:447-450, pkg/action/resource_policy.go:40",
    },
}


def _group(doc: Mapping[str, Any]) -> str:
    api = doc.get("apiVersion")
    return api.split("/", 1)[0] if isinstance(api, str) and "/" in api else ""


def is_deployer(doc: Any) -> bool:
    """A Flux Kustomization or HelmRelease (parsed apiVersion group and kind)."""
    return isinstance(doc, Mapping) and (
        (_group(doc) == KUSTOMIZE_GROUP and doc.get("kind") == "Kustomization")
        or (_group(doc) == HELM_GROUP and doc.get("kind") == "HelmRelease"))


def _sub(value: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    inner = value.get(key)
    return inner if isinstance(inner, Mapping) else {}


def _pointer(*parts: object) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _groups(obj: Mapping[str, Any], kind: str) -> Sequence[Any]:
    spec = _sub(obj, "spec")
    if kind == "RayService":
        spec = _sub(spec, "rayClusterConfig")
    groups = spec.get("workerGroupSpecs")
    return groups if isinstance(groups, list) else []


def paths(obj: Mapping[str, Any], kind: str) -> list[str]:
    """The JSON pointers (RFC 6901) of what the autoscaler owns, one per worker group: Flux's ignore
    rules take no wildcard (kustomizations.md "Ignore Rules")."""
    prefix: tuple[str, ...] = ("spec", "rayClusterConfig") if kind == "RayService" else ("spec",)
    out: list[str] = []
    for i, _ in enumerate(_groups(obj, kind)):
        out += [_pointer(*prefix, "workerGroupSpecs", i, "replicas"),
                _pointer(*prefix, "workerGroupSpecs", i, "scaleStrategy")]
    return out


def advice(deployer: Mapping[str, Any], kind: str, namespace: str, name: str,
           obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Flux advice for an ``ignore-differences`` decision on ``kind namespace/name`` (``obj``:
    its manifest), deployed by ``deployer``."""
    meta = _sub(deployer, "metadata")
    by = {"kind": str(deployer.get("kind")), "namespace": str(meta.get("namespace") or ""),
          "name": str(meta.get("name") or "")}
    target = {"group": "ray.io", "kind": kind, "name": name, "namespace": namespace}
    out: dict[str, Any] = {"tool": "flux", "deployer": by}
    if kind == "RayService":
        out.update(fix="none-needed", ignore=[], notes=[
            "Flux re-applies the RayService, but the autoscaler scales the RayCluster KubeRay made, and "
            "KubeRay leaves worker replicas out of the cluster hash: nothing is reset and nothing "
            "fights. The Git edit simply does not reach the running cluster; keep it equal to what the "
            "next cluster should start with.",
            f"Do not annotate the RayService {RULES['ssa-annotation']['key']}: IfNotPresent: Flux would "
            "then never apply a later Git edit to it (serveConfigV2, images) while it exists."])
        return out
    if by["kind"] == "HelmRelease":
        rule = RULES["helmrelease-drift-ignore"]
        out.update(fix="drift-detection-ignore", field=rule["field"], since=rule["since"],
                   ignore=[{"paths": paths(obj, kind), "target": target}], notes=[
                       "helm-controller corrects drift only with spec.driftDetection.mode: enabled (the "
                       "default is disabled): with it, add this rule so the autoscaler keeps the replicas.",
                       "An upgrade of the release still sends the chart's replicas: keep them equal to "
                       "minReplicas in the chart's values (or leave them out)."])
        return out
    rule = RULES["kustomization-ignore"]
    out.update(fix="spec-ignore", field=rule["field"], since=rule["since"],
               ignore=[{"paths": paths(obj, kind), "target": target}], notes=[
                   "kustomize-controller re-applies the RayCluster at every interval with server-side "
                   "apply and would reset the replicas the Ray autoscaler set; with these ignore rules it "
                   "keeps the in-cluster value and still applies every other Git edit.",
                   f"Before {rule['since']}: leave replicas out of Git (or keep them equal to "
                   "minReplicas) so Flux does not own them.",
                   f"Not {RULES['ssa-annotation']['key']}: IfNotPresent: it stops every later Git edit "
                   "to the RayCluster (an image bump too) from being applied."])
    return out


def not_applied(obj: Mapping[str, Any], created: bool) -> str:
    """Why kustomize-controller does not apply ``obj`` as Git has it ("" when it does): the
    ``kustomize.toolkit.fluxcd.io/reconcile: disabled`` or ``ssa: Ignore`` exclusion, or ``ssa:
    IfNotPresent`` for an object that already exists (kustomization_controller.go:859-866)."""
    marks = _marks(obj)
    key = RULES["ssa-annotation"]["key"]
    if marks.get(f"{KUSTOMIZE_GROUP}/reconcile") == "disabled" or marks.get(key) == "Ignore":
        return (f"Flux never applies this object ({KUSTOMIZE_GROUP}/reconcile: disabled or {key}: Ignore): "
                "the prediction is for applying it another way")
    if marks.get(key) == "IfNotPresent" and not created:
        return (f"{key}: IfNotPresent: Flux applies this object only when it does not exist, so this update "
                "is not applied while it does: the prediction is for applying it another way")
    return ""


def not_pruned(deployer: Mapping[str, Any], kept: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> str:
    """Why Flux leaves ``obj``, gone from what ``deployer`` renders, in the cluster ("" when Flux
    deletes it). ``kept``: the same deployer at the new commit (None: it is removed too).

    kustomize-controller deletes what left the build only with ``spec.prune: true``
    (kustomization_controller.go:1101), and never an object marked ``prune: disabled``,
    ``reconcile: disabled`` or ``ssa: Ignore`` (label or annotation, :1408-1414). A removed
    Kustomization deletes its objects by its ``deletionPolicy``: ``MirrorPrune`` (the default,
    api/v1/kustomization_types.go:409-414) as ``prune`` says, ``Delete`` and ``WaitForTermination``
    always, ``Orphan`` never; a suspended one never (kustomization_controller.go:1155-1175).
    helm-controller upgrades or uninstalls with Helm, which keeps an object annotated
    ``helm.sh/resource-policy: keep`` (helm v3.21.4 pkg/kube/client.go:447-450,
    pkg/action/resource_policy.go:40)."""
    meta = _sub(obj, "metadata")
    if deployer.get("kind") == "HelmRelease":
        if str(_sub(meta, "annotations").get(RULES["helm-keep"]["key"]) or "").strip().lower() == "keep":
            return (f"Flux does not delete this object: {RULES['helm-keep']['key']}: keep makes Helm leave "
                    "it in the cluster when the release no longer renders it")
        return ""
    marks = _marks(obj)
    for key, value in RULES["prune-exclusions"].items():
        if key != "cite" and marks.get(key) == value:
            return (f"Flux does not delete this object: {key}: {value} keeps it out of Flux's garbage "
                    "collection, so it stays in the cluster once it is gone from Git")
    where = f"Kustomization {_sub(deployer, 'metadata').get('namespace') or 'default'}/" \
            f"{_sub(deployer, 'metadata').get('name')}"
    if kept is not None:
        if _sub(kept, "spec").get("prune") is not True:
            return (f"Flux does not delete this object: {where} has prune: false, so it stays in the cluster "
                    "once it is gone from Git (delete it by hand, or set prune: true)")
        return ""
    spec = _sub(deployer, "spec")
    policy = str(spec.get("deletionPolicy") or "MirrorPrune")
    if spec.get("suspend") is True:
        return f"Flux does not delete this object: {where} is removed while suspended, which deletes nothing"
    if policy == "Orphan" or (policy == "MirrorPrune" and spec.get("prune") is not True):
        said = "deletionPolicy: Orphan" if policy == "Orphan" else "prune: false (deletionPolicy MirrorPrune)"
        return (f"Flux does not delete this object: {where} is removed with {said}, which leaves its "
                "objects in the cluster")
    return ""


def _marks(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object's labels and annotations as one mapping: kustomize-controller reads its marks
    from either (fluxcd/pkg ssa/utils/meta.go:61, AnyInMetadata)."""
    meta = _sub(obj, "metadata")
    return {**_sub(meta, "labels"), **_sub(meta, "annotations")}


def reason(deployer: Mapping[str, Any]) -> str:
    """The ``ignore-differences`` reason for an object Flux deploys (in place of Argo CD's)."""
    return (f"Git is fighting the Ray autoscaler: tell Flux ({deployer.get('kind')}) to leave the "
            "autoscaler-owned fields alone (see the Flux advice) instead of applying them")
