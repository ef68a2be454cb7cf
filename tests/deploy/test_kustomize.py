"""Every kustomization under deploy/ rendered with the real ``kubectl kustomize``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from diffing.policy import Policy

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUBECTL = shutil.which("kubectl")
READ_ONLY = {"get", "list", "watch"}  # the rollout watch lists and watches (docs/rollout-watch.md)
# The only writes: the rollout watch's ConfigMaps and Leases, in the service's own namespace.
ROLLOUT_WRITES = {("", "configmaps"), ("coordination.k8s.io", "leases")}
HOOK = "argocd.argoproj.io/hook"

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (with kustomize) is not installed")


def render(directory: Path) -> list[dict[str, Any]]:
    out = subprocess.run([str(KUBECTL), "kustomize", str(directory)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def kustomizations() -> list[Path]:
    return sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Deployment" else obj["spec"]
    return spec["containers"]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"] if obj["kind"] == "Deployment" else obj["spec"]


def test_kustomize_directories_are_the_expected_ones() -> None:
    assert [str(p.relative_to(DEPLOY)) for p in kustomizations()] == \
        ["argocd", "argocd/example-application", "base"]


@pytest.mark.parametrize("directory", kustomizations(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kustomize_renders_without_secret_values(directory: Path) -> None:
    objs = render(directory)
    assert objs
    assert [o for o in objs if o["kind"] == "Secret"] == []
    for obj in objs:
        if obj["kind"] not in ("Deployment", "Pod"):
            continue
        for c in containers(obj):
            for env in c.get("env") or []:
                if any(word in env["name"] for word in ("TOKEN", "SECRET", "PASSWORD", "APP_ID")):
                    assert "value" not in env, env
                    assert set(env["valueFrom"]) == {"secretKeyRef"}, env


@pytest.mark.parametrize("directory", kustomizations(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kustomize_rbac_is_read_only(directory: Path) -> None:
    objs = render(directory)
    for role in (o for o in objs if o["kind"] in ("ClusterRole", "Role")):
        for rule in role["rules"]:
            assert "*" not in rule.get("resources", []) and "*" not in rule.get("apiGroups", [])
            if role["kind"] == "Role" and not set(rule["verbs"]) <= READ_ONLY:
                assert {(g, r) for g in rule["apiGroups"] for r in rule["resources"]} <= ROLLOUT_WRITES, rule
                continue
            assert set(rule["verbs"]) <= READ_ONLY, (role["metadata"]["name"], rule)
    accounts = {(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in objs if o["kind"] == "ServiceAccount"}
    roles = {o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole"}
    for binding in (o for o in objs if o["kind"] == "ClusterRoleBinding"):
        assert binding["roleRef"]["name"] in roles
        assert {(s["namespace"], s["name"]) for s in binding["subjects"]} <= accounts


def _rules(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(g, r) for o in objs if o["kind"] == "ClusterRole" for rule in o["rules"]
            for g in rule["apiGroups"] for r in rule["resources"]}


def _hardened(obj: dict[str, Any]) -> None:
    spec = pod_spec(obj)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] > 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec["containers"]:
        sc = c["securityContext"]
        assert (sc["readOnlyRootFilesystem"], sc["allowPrivilegeEscalation"], sc["capabilities"]) == \
            (True, False, {"drop": ["ALL"]})
        assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"]
        assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}  # writable scratch space


def _policy_mounted(objs: list[dict[str, Any]], obj: dict[str, Any]) -> None:
    """RAYSERVICE_IMPACT_POLICY_FILE points into the rendered policy ConfigMap, and it parses."""
    (c,) = containers(obj)
    path = Path(next(e["value"] for e in c["env"] if e["name"] == "RAYSERVICE_IMPACT_POLICY_FILE"))
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == str(path.parent))
    volume = next(v for v in pod_spec(obj)["volumes"] if v["name"] == mount["name"])
    cm = next(o for o in objs if o["kind"] == "ConfigMap"
              and o["metadata"]["name"] == volume["configMap"]["name"])
    assert Policy.from_mapping(yaml.safe_load(cm["data"][path.name])) == Policy()


def test_kustomize_base_objects() -> None:
    objs = render(DEPLOY / "base")
    assert sorted(o["kind"] for o in objs) == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                                               "Namespace", "NetworkPolicy", "Role", "RoleBinding", "Service",
                                               "ServiceAccount"]
    assert {o["metadata"].get("namespace") for o in objs
            if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")} == {"rayservice-impact"}
    assert _rules(objs) == {("ray.io", "rayservices"), ("ray.io", "rayclusters"), ("ray.io", "rayjobs"),
                            ("", "nodes"), ("", "pods"), ("", "events")}
    # The rollout watch: watch on what it follows, cluster-wide; writes only in its namespace.
    watched = {(g, r) for rule in one(objs, "ClusterRole")["rules"] if "watch" in rule["verbs"]
               for g in rule["apiGroups"] for r in rule["resources"]}
    assert watched == {("ray.io", "rayservices"), ("ray.io", "rayclusters"), ("ray.io", "rayjobs"),
                       ("", "pods"), ("", "events")}
    role, binding = one(objs, "Role"), one(objs, "RoleBinding")
    role_rules = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert role_rules == ROLLOUT_WRITES
    assert all({"get", "list", "create", "update"} <= set(rule["verbs"]) for rule in role["rules"])
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rayservice-impact",
                                    "namespace": "rayservice-impact"}]
    deploy = one(objs, "Deployment")
    env = {e["name"]: e for e in containers(deploy)[0]["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    _hardened(deploy)
    _policy_mounted(objs, deploy)
    (c,) = containers(deploy)
    args = build_parser().parse_args(c["args"])
    assert (c["command"], args.command, args.host, args.port) == \
        (["rayservice-impact"], "serve", "0.0.0.0", 8080)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert (c["livenessProbe"]["httpGet"], c["readinessProbe"]["httpGet"]) == \
        ({"path": "/healthz", "port": "http"}, {"path": "/readyz", "port": "http"})
    assert ports == {"http": 8080}
    assert pod_spec(deploy)["serviceAccountName"] == one(objs, "ServiceAccount")["metadata"]["name"]
    service = one(objs, "Service")
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_kustomize_argocd_hook_objects() -> None:
    objs = render(DEPLOY / "argocd")
    assert sorted(o["kind"] for o in objs) == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Pod",
                                               "ServiceAccount"]
    # Everything is a PreSync hook (normal resources are applied only after PreSync), and the
    # RBAC, service account and policy come in an earlier wave than the Pod that uses them.
    waves = {}
    for obj in objs:
        ann = obj["metadata"]["annotations"]
        assert (ann[HOOK], ann["argocd.argoproj.io/hook-delete-policy"]) == ("PreSync", "BeforeHookCreation")
        waves[obj["kind"]] = int(ann["argocd.argoproj.io/sync-wave"])
    assert max(w for k, w in waves.items() if k != "Pod") < waves["Pod"]
    assert _rules(objs) == {("ray.io", "rayservices"), ("ray.io", "rayclusters"), ("ray.io", "rayjobs"),
                            ("", "nodes"), ("", "pods")}
    pod = one(objs, "Pod")
    _hardened(pod)
    _policy_mounted(objs, pod)
    spec = pod["spec"]
    assert (spec["restartPolicy"], spec["activeDeadlineSeconds"] > 0) == ("Never", True)
    assert spec["serviceAccountName"] == one(objs, "ServiceAccount")["metadata"]["name"]
    (c,) = spec["containers"]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    env = {e["name"]: e for e in c["env"]}
    # --app comes from the pod's own annotation through the downward API.
    field = env["ARGOCD_APP_NAME"]["valueFrom"]["fieldRef"]["fieldPath"]
    annotation = field.removeprefix("metadata.annotations['").removesuffix("']")
    app_name = pod["metadata"]["annotations"][annotation]
    argv = [a.replace("$(ARGOCD_APP_NAME)", app_name) for a in c["args"]]
    args = build_parser().parse_args(argv)
    assert (args.command, args.app) == ("argocd-presync", "ray-serving")
    assert env["RAYSERVICE_IMPACT_ARGOCD_SERVER"]["value"].startswith("https://")
    assert env["RAYSERVICE_IMPACT_ARGOCD_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "token"
    assert env["RAYSERVICE_IMPACT_FAIL_OPEN"]["value"] == "false"


def test_kustomize_argocd_overlay_moves_namespace_and_names(tmp_path: Path) -> None:
    # kustomize takes a relative path to a base directory (an absolute one is refused).
    base = os.path.relpath(DEPLOY / "argocd", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(f"namespace: ml\nnameSuffix: -ml\nresources: [{base}]\n")
    objs = render(tmp_path)
    binding = one(objs, "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rayservice-impact-presync-ml",
                                    "namespace": "ml"}]
    assert one(objs, "Pod")["spec"]["serviceAccountName"] == "rayservice-impact-presync-ml"


def test_kustomize_example_application_ignores_autoscaler_fields() -> None:
    app = one(render(DEPLOY / "argocd" / "example-application"), "Application")
    options = app["spec"]["syncPolicy"]["syncOptions"]
    assert "ApplyOutOfSyncOnly=true" in options
    assert not any(o.startswith("RespectIgnoreDifferences") for o in options)
    rules = {r["kind"]: r["jqPathExpressions"] for r in app["spec"]["ignoreDifferences"]}
    assert rules["RayService"] == [".spec.rayClusterConfig.workerGroupSpecs[]?.replicas",
                                   ".spec.rayClusterConfig.workerGroupSpecs[]?.scaleStrategy"]
    assert app["spec"]["source"]["kustomize"]["commonAnnotations"] == \
        {"rayservice-impact/argocd-app": "${ARGOCD_APP_NAME}"}
    raw = (DEPLOY / "argocd" / "example-application" / "application.yaml").read_text()
    assert "Do NOT add RespectIgnoreDifferences=true" in raw


def test_kustomize_example_ignore_rules_are_valid_jq_paths() -> None:
    jq = pytest.importorskip("jq")
    app = one(render(DEPLOY / "argocd" / "example-application"), "Application")
    rs = yaml.safe_load((REPO / "tests/data/argocd/ray-service.stable-diffusion.yaml").read_text())
    rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": ["w-1"]}
    (rule,) = [r for r in app["spec"]["ignoreDifferences"] if r["kind"] == "RayService"]
    out = rs
    for expr in rule["jqPathExpressions"]:  # Argo CD wraps each one as del(<expr>)
        out = jq.compile(f"del({expr})").input_value(out).first()
    group = out["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    assert ("replicas" in group, "scaleStrategy" in group, group["minReplicas"]) == (False, False, 1)
    empty = {"spec": {"rayClusterConfig": {}}}
    for expr in rule["jqPathExpressions"]:  # `[]?` keeps a RayService without groups valid
        assert jq.compile(f"del({expr})").input_value(json.loads(json.dumps(empty))).first() == empty


def test_kustomize_network_policy_admits_only_the_http_port_and_https_out() -> None:
    objs = render(DEPLOY / "base")
    policy = one(objs, "NetworkPolicy")
    deploy = one(objs, "Deployment")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= \
        deploy["spec"]["template"]["metadata"]["labels"].items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == ["http"]
    egress = {(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert egress == {(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP")}
    blocks = [b["ipBlock"] for rule in policy["spec"]["egress"] for b in rule.get("to", [])]
    assert all("169.254.169.254/32" in b["except"] for b in blocks)
