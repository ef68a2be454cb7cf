"""The health checks give the same answer in gopher-lua, the Lua VM Argo CD embeds, as in lupa's Lua 5.1.

tests/deploy/test_argocd_health.py checks the answers in C Lua 5.1 (lupa). Argo CD runs gopher-lua,
a Go reimplementation: tools/go/argocd-lua builds a small runner on gopher-lua v1.1.1 with Argo
CD's library set (util/lua/lua.go: package, base, table, a reduced os), built like the render tests'
helm and kustomize (tests/tools.py; skipped, and said so, where Go or its module proxy is missing).
Both VMs get the same objects and must return the same status and message: a difference would
mean a script leans on behaviour the two VMs do not share (table iteration order, number printing).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scripts.gen_argocd_health import HEALTH, KINDS, read_scripts
from tests import tools
from tests.deploy.argocd_lua import run_health
from tests.deploy.ray_status import (
    PROVISIONED,
    PROVISIONING,
    STATUS,
    T0,
    UP,
    apps,
    cluster,
    cluster_status,
    cond,
    initializing,
    job,
    rc,
    resource,
    rj,
    rs,
    serving,
    upgrading,
)

SCRIPTS = read_scripts()
STEMS = {kind: stem for stem, kind in KINDS.items()}

pytestmark = pytest.mark.timeout(1800)  # a cold build of the runner downloads and compiles gopher-lua


@pytest.fixture(scope="module")
def gopher() -> str:
    try:
        return tools.build("argocd-lua")
    except tools.Unavailable as exc:
        pytest.skip(f"GOPHER-LUA RUNNER NOT BUILT: {exc}")


def run_gopher(binary: str, kind: str, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    script = HEALTH / f"{STEMS[kind]}.lua"
    out = subprocess.run(
        [binary, str(script)],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    results = json.loads(out)
    assert isinstance(results, list)
    return results


# The hand-built states of test_argocd_health.py, one or more per health.
CORPUS: list[tuple[str, dict[str, Any]]] = [
    ("RayService", rs(None)),
    ("RayService", rs(serving())),
    ("RayService", rs(serving(app_status="UNHEALTHY"))),
    ("RayService", rs(serving(app_status="DEPLOYING"))),
    ("RayService", rs(serving(generation=2), generation=3)),
    ("RayService", rs(initializing())),
    ("RayService", rs(initializing(), annotations={"ray.io/initializing-timeout": "30m"})),
    ("RayService", rs(upgrading(apps("DEPLOYING")), generation=2)),
    ("RayService", rs(upgrading(apps("RUNNING"), trafficRoutedPercent=30), generation=2)),
    (
        "RayService",
        rs(upgrading({**apps("DEPLOY_FAILED", "boom"), "aaa": {"status": "UNHEALTHY"}}), generation=2),
    ),
    (
        "RayService",
        rs(
            upgrading(
                pending_cluster=cluster_status(cond("HeadPodReady", "False", "CrashLoopBackOff", "back-off"))
            ),
            generation=2,
        ),
    ),
    (
        "RayService",
        rs(
            upgrading(
                pending_cluster=cluster_status(
                    cond("ReplicaFailure", "True", "FailedCreateWorkerPod", "quota")
                )
            ),
            generation=2,
        ),
    ),
    (
        "RayService",
        rs(
            {"observedGeneration": 2, "conditions": [cond("Suspended", "True", "SuspendComplete")]},
            generation=2,
            suspend=True,
        ),
    ),
    ("RayCluster", rc(None)),
    ("RayCluster", rc(cluster(UP, PROVISIONED))),
    ("RayCluster", rc(cluster(UP, PROVISIONING, ready=1, state=""))),
    ("RayCluster", rc(cluster(UP, PROVISIONED, ready=2, desired=4))),
    ("RayCluster", rc(cluster(("False", "CrashLoopBackOff"), PROVISIONED))),
    ("RayCluster", rc({"state": "suspended"}, suspend=True)),
    ("RayJob", rj(None)),
    ("RayJob", rj(job("Running", "RUNNING"))),
    ("RayJob", rj(job("Complete", "SUCCEEDED"))),
    ("RayJob", rj(job("Failed", "FAILED", reason="DeadlineExceeded", message="late"))),
    ("RayJob", rj({"jobDeploymentStatus": "Suspended"}, suspend=True)),
    ("RayCronJob", resource("RayCronJob", {"lastScheduleTime": T0}, {"schedule": "0 3 * * *"})),
    ("RayCronJob", resource("RayCronJob", None, {"schedule": "0 3 * * *", "suspend": True})),
]


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_gopher_lua_agrees_with_lua51_on_the_known_states(gopher: str, kind: str) -> None:
    objects = [obj for k, obj in CORPUS if k == kind]
    assert objects
    assert run_gopher(gopher, kind, objects) == [run_health(SCRIPTS[kind], obj) for obj in objects]


@settings(max_examples=120, deadline=None)
@given(
    kind=st.sampled_from(sorted(SCRIPTS)),
    status=st.none() | STATUS,
    suspend=st.none() | st.booleans(),
    generation=st.integers(1, 4),
)
def test_gopher_lua_agrees_with_lua51_on_any_status(
    gopher: str, kind: str, status: dict[str, Any] | None, suspend: bool | None, generation: int
) -> None:
    spec: dict[str, Any] = {} if suspend is None else {"suspend": suspend}
    obj = resource(kind, status, spec, generation)
    assert run_gopher(gopher, kind, [obj]) == [run_health(SCRIPTS[kind], obj)]


def test_gopher_lua_withholds_the_string_library_too(gopher: str, tmp_path: Path) -> None:
    script = tmp_path / "probe.lua"
    script.write_text('return {status = "Healthy", message = ("ray"):upper()}\n')
    out = subprocess.run(
        [gopher, str(script)], input="[{}]", capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (result,) = json.loads(out)
    assert "attempt to index" in result["error"]
