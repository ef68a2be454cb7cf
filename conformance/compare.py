"""The comparison: the Python prediction (``diffing.analyze``) against the oracle, per case, in
one vocabulary, and the documented limits a disagreement may match.

Outcome fields (each compared only where both sides decide it):

* ``admission``   accepted | rejected: the API server's verdict on the "after" object under
  fieldValidation=Warn (unknown fields pruned; the oracle's strict verdict is reported apart).
  Python: rejected iff a ``schema-violation`` finding.
* ``validation``  ok | failed: KubeRay's own validation of the stored object (admitted cases only).
  Python: the rollout's reason says the operator's validation fails.
* ``rollout``     the resource's ``rollout``; for a RayCluster ``not-applied`` without a rejection or
  a validation failure is ``none`` (both: nothing moves now; the oracle cannot tell "never" from
  "not now").
* ``accelerators`` the extra amount of every extended resource (a name with a "/") while the
  change rolls out: Python's ``capacity.extra`` against the oracle's peak minus before.
* ``hash``        the RayCluster hash of the stored "after" spec: Python's Go-JSON encoding and
  SHA-1 (``diffing.engine.recreate_hash_input`` / ``recreate_hash``) against the bytes and value
  KubeRay's ``GenerateHashWithoutReplicasAndWorkersToDelete`` produced.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
LIMITS = os.path.join(HERE, "limits.json")
FIELDS = ("admission", "validation", "rollout", "accelerators", "hash")


def _policy(case: Mapping[str, Any]) -> dict[str, Any] | None:
    operator: dict[str, Any] = {}
    if case.get("featureGates"):
        operator["featureGates"] = dict(case["featureGates"])
    if case.get("env"):
        operator["env"] = dict(case["env"])
    return {"operator": operator} if operator else None


def operation(case: Mapping[str, Any]) -> str:
    """``create`` (no before), ``delete`` (no after) or ``update``."""
    return "create" if case.get("before") is None else "delete" if case.get("after") is None else "update"


def _text(obj: Mapping[str, Any] | None) -> str:
    """A side as the CLI reads it: YAML, or ``""`` for an absent object (how ``analyze`` is told
    that the change creates or deletes it)."""
    return "" if obj is None else yaml.safe_dump(obj, sort_keys=False)


def predict(case: Mapping[str, Any]) -> dict[str, Any]:
    """The Python prediction of ``case`` in the common vocabulary. A create or a delete keeps the
    prediction's own ``create`` / ``delete`` rollout: the oracle classifies those cases in the
    same words (``none`` when ``managedBy`` names another controller, ``not-applied`` when the
    API server or KubeRay's validation rejects a created object)."""
    import diffing

    before = _text(case.get("before"))
    after = _text(case.get("after"))
    try:
        report = diffing.analyze(before, after, kuberay_version=case.get("version", "1.7.0"),
                                 policy=_policy(case)).to_dict()
    except Exception as exc:  # noqa: BLE001 - a prediction error is an answer to compare too
        return {"error": f"{type(exc).__name__}: {exc}"}
    resources = [r for r in report["resources"] if r["kind"] == case["kind"]]
    if len(resources) != 1:
        return {"error": f"{len(resources)} {case['kind']} reports"}
    r = resources[0]
    codes = {f["code"] for f in r["findings"]}
    rejected = "schema-violation" in codes
    reasons = " ".join(r["reasons"])
    failed = not rejected and r["rollout"] == "not-applied" and (
        "validation fails" in reasons or "ValidationFailed" in reasons)
    rollout = r["rollout"]
    if case["kind"] == "RayCluster" and rollout == "not-applied" and not rejected and not failed:
        rollout = "none"
    out: dict[str, Any] = {
        "admission": "rejected" if rejected else "accepted",
        "validation": "failed" if failed else "ok",
        "rollout": rollout,
        "accelerators": {k: _num(v) for k, v in (r["capacity"]["extra"] or {}).items() if "/" in k},
        "reasons": r["reasons"],
        "findings": sorted(codes),
    }
    if case["kind"] in ("RayService", "RayCluster") and case.get("after") is not None:
        out.update(_python_hash(case))
    return out


def _python_hash(case: Mapping[str, Any]) -> dict[str, str]:
    """Python's Go-JSON encoding of the RayCluster hash input and its hash.

    A RayCluster: ``recreate_hash_input`` / ``recreate_hash`` as the analysis calls them (the
    spec after the RayCluster controller's ``setDefaults``). A RayService: the same encoding
    without ``setDefaults`` (``rayClusterSpecForHashing`` runs on the RayService's spec as
    stored, rayservice_controller.go:1498-1502) and without ``suspend``; the analysis itself
    never hashes a RayService (it compares encodings), so this calls the encoder the way the
    operator hashes. ``_clear`` is diffing's own muting helper, only read here.
    """
    import base64
    import hashlib

    from diffing.engine import (
        Engine,
        _clear,
        cluster_schema,
        cluster_stored_spec,
        go_json,
        recreate_hash_input,
    )
    from diffing.policy import Policy
    from diffing.versions import rules_for

    engine = Engine(rules_for(case.get("version", "1.7.0")), Policy())
    api_version = case["after"]["apiVersion"]
    spec = case["after"].get("spec") or {}
    try:
        if case["kind"] == "RayCluster":
            encoded = recreate_hash_input(engine, spec, api_version)
        else:
            # The rayClusterConfig as stored (a v1alpha1 write as v1 holds it), then encoded.
            rcc = cluster_stored_spec(engine, spec.get("rayClusterConfig") or {}, api_version)
            rcc = {k: v for k, v in rcc.items() if k != "suspend"}
            if engine.schemas.converted(api_version):
                api_version = "ray.io/v1"
            types = engine.gotypes
            encoded = types.encode(rcc, types.root, engine.schemas, cluster_schema(engine, api_version))
            for pattern in engine.cluster_muted:
                _clear(types, engine.schemas, encoded, types.root, pattern)
        data = go_json(encoded)
    except Exception as exc:  # noqa: BLE001
        return {"hash": f"error: {type(exc).__name__}: {exc}"}
    digest = hashlib.sha1(data, usedforsecurity=False).digest()
    return {"hashInput": data.decode(), "hash": base64.b32hexencode(digest).decode("ascii")}


def _num(v: Any) -> str:
    try:
        f = Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        return str(v)
    return str(f.numerator) if f.denominator == 1 else str(float(f))


def oracle_view(result: Mapping[str, Any]) -> dict[str, Any]:
    """The oracle's result in the common vocabulary."""
    adm = (result.get("admission") or {}).get("after") or {}
    val = result.get("validation") or {}
    out: dict[str, Any] = {
        "admission": "accepted" if adm.get("accepted") else "rejected",
        "strict": "rejected" if (adm.get("unknownFields") or not adm.get("accepted")) else "accepted",
        "validation": "failed" if val.get("failed") else "ok",
        "rollout": result.get("rollout"),
        "accelerators": {k: _num(v) for k, v in
                         ((result.get("accelerators") or {}).get("extra") or {}).items()},
    }
    h = result.get("hash")
    if h:
        out["hash"], out["hashInput"] = h.get("goal"), h.get("goalInput")
    return out


def compare(case: Mapping[str, Any], py: Mapping[str, Any],
            oracle: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every outcome field on which the two disagree (empty: agreement)."""
    out: list[dict[str, Any]] = []

    def differ(field: str, p: Any, o: Any, **extra: Any) -> None:
        out.append({"field": field, "python": p, "oracle": o, **extra})

    if py.get("error"):
        differ("prediction-error", py["error"], None)
        return out
    if py["admission"] != oracle["admission"]:
        differ("admission", py["admission"], oracle["admission"])
    if py["admission"] == oracle["admission"] == "accepted" and operation(case) != "delete":
        if py["validation"] != oracle["validation"]:
            differ("validation", py["validation"], oracle["validation"])
        if "hash" in oracle and oracle["hash"]:
            if py.get("hashInput") != oracle.get("hashInput"):
                first = _first_difference(py.get("hashInput") or "", oracle.get("hashInput") or "")
                differ("hash", py.get("hash"), oracle["hash"], firstDifference=first)
            elif py.get("hash") != oracle["hash"]:
                differ("hash", py.get("hash"), oracle["hash"], note="same bytes, different digest")
    if py["rollout"] != oracle["rollout"]:
        differ("rollout", py["rollout"], oracle["rollout"])
    if py["accelerators"] != oracle["accelerators"]:
        differ("accelerators", py["accelerators"], oracle["accelerators"])
    return out


def agreement_fields(py: Mapping[str, Any], oracle: Mapping[str, Any], op: str = "update") -> list[str]:
    """The fields this case decides on both sides (the denominators of the agreement figures). A
    delete writes no object: nothing to validate or hash."""
    if py.get("error"):
        return ["prediction-error"]
    fields = ["admission", "rollout", "accelerators"]
    if py["admission"] == oracle["admission"] == "accepted" and op != "delete":
        fields.append("validation")
        if oracle.get("hash"):
            fields.append("hash")
    return fields


def _first_difference(a: str, b: str) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at byte {i}: python …{a[max(0, i - 60):i + 60]}… oracle …{b[max(0, i - 60):i + 60]}…"


# ---- documented limits -----------------------------------------------------------------------------

def limits_path(version: str = "1.7.0") -> str:
    """The limits file of a KubeRay version: limits.json (v1.7.0), limits-v1.6.2.json ..."""
    return LIMITS if version == "1.7.0" else os.path.join(os.path.dirname(LIMITS), f"limits-v{version}.json")


def load_limits(path: str = LIMITS, version: str | None = None) -> list[dict[str, Any]]:
    """The accepted disagreements of a limits file (``version``: that version's file). A version's
    file may ``inherit`` entries of limits.json by id (the same behaviour seen under both)."""
    if version is not None:
        path = limits_path(version)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = list(data["limits"])
    if data.get("inherit"):
        base = {lim["id"]: lim for lim in load_limits(LIMITS)}
        missing = [i for i in data["inherit"] if i not in base]
        if missing:
            raise KeyError(f"{path}: inherits unknown limits {missing}")
        out += [base[i] for i in data["inherit"]]
    return out


def matching_limit(case: Mapping[str, Any], d: Mapping[str, Any], limits: Iterable[Mapping[str, Any]]
                   ) -> Mapping[str, Any] | None:
    """The first documented limit that covers disagreement ``d`` of ``case``: same field, the same
    answers where the limit names them, its kind, and every mutation it names among the case's
    (``anyMutation``: at least one of them); ``apiVersion``: the written object's (the after
    side, the before side of a delete); ``pruned``: whether the API server pruned fields of the
    written object (the oracle's unknown-field paths, ``d["oracleUnknownFields"]``)."""
    written = case.get("after") if case.get("after") is not None else case.get("before")
    for lim in limits:
        if lim["field"] != d["field"]:
            continue
        if "kind" in lim and lim["kind"] != case["kind"]:
            continue
        if "python" in lim and lim["python"] != d["python"]:
            continue
        if "oracle" in lim and lim["oracle"] != d["oracle"]:
            continue
        muts = set(case.get("mutations") or ())
        if not set(lim.get("mutations") or ()) <= muts:
            continue
        if lim.get("anyMutation") and not set(lim["anyMutation"]) & muts:
            continue
        if "base" in lim and lim["base"] != case.get("base"):
            continue
        if "pythonReason" in lim and lim["pythonReason"] not in " ".join(d.get("pythonReasons") or ()):
            continue
        if "difference" in lim and lim["difference"] not in (d.get("firstDifference") or ""):
            continue
        if "apiVersion" in lim and lim["apiVersion"] != (written or {}).get("apiVersion"):
            continue
        if "pruned" in lim and lim["pruned"] != bool(d.get("oracleUnknownFields")):
            continue
        return lim
    return None


# ---- a whole run -----------------------------------------------------------------------------------

def evaluate(cases: Iterable[Mapping[str, Any]], results: Mapping[str, Mapping[str, Any]],
             limits: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement per field, every disagreement (with the limit that covers it, if any), and the
    cases the oracle could not run (e.g. a sample whose "before" KubeRay rejects)."""
    agree: dict[str, list[int]] = {}
    by_family: dict[str, dict[str, list[int]]] = {}
    disagreements: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for case in cases:
        res = results.get(case["id"])
        if res is None or res.get("error"):
            skipped.append({"id": case["id"], "why": (res or {}).get("error", "no result")[:300]})
            continue
        py = predict(case)
        orc = oracle_view(res)
        diffs = compare(case, py, orc)
        bad = {d["field"] for d in diffs}
        family = by_family.setdefault(str(case.get("family") or "update"), {})
        for f in agreement_fields(py, orc, operation(case)):
            for counts in (agree, family):
                counts.setdefault(f, [0, 0])
                counts[f][1] += 1
                counts[f][0] += f not in bad
        for d in diffs:
            d = {"id": case["id"], "kind": case["kind"], "mutations": case.get("mutations"),
                 "family": case.get("family") or "update", **d,
                 "pythonReasons": py.get("reasons"), "oracleEvents": res.get("events"),
                 "oracleClusters": res.get("clusters"), "oraclePods": res.get("pods"),
                 "oracleUnknownFields": _unknown_fields(res),
                 "probe": res.get("probe")}
            d["limit"] = (matching_limit(case, d, limits) or {}).get("id")
            disagreements.append(d)
    return {"agreement": {f: {"agree": a, "of": n} for f, (a, n) in sorted(agree.items())},
            # the same per case family (cases.FAMILY_SHARE: create, delete, create-invalid,
            # v1alpha1; every other case is an update)
            "agreementByFamily": {fam: {f: {"agree": a, "of": n} for f, (a, n) in sorted(counts.items())}
                                  for fam, counts in sorted(by_family.items())},
            "disagreements": disagreements, "skipped": skipped,
            "unexplained": [d for d in disagreements if not d["limit"]]}


def _unknown_fields(result: Mapping[str, Any]) -> list[str] | None:
    """The paths the API server pruned from the written object (the oracle's admission)."""
    return ((result.get("admission") or {}).get("after") or {}).get("unknownFields")


def minimal(disagreement: Mapping[str, Any], report: Mapping[str, Any]) -> str | None:
    """A single-mutation case of the same base with the same disagreement, if the run has one."""
    base = disagreement["id"].split("|", 1)[0]
    for d in report["disagreements"]:
        if (d["id"].split("|", 1)[0] == base and len(d.get("mutations") or ()) == 1
                and d["mutations"][0] in (disagreement.get("mutations") or ())
                and (d["field"], d["python"], d["oracle"])
                == (disagreement["field"], disagreement["python"], disagreement["oracle"])):
            return str(d["id"])
    return None
