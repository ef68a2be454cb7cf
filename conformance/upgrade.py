"""The operator-upgrade case: objects created by KubeRay v1.6.2, then reconciled by v1.7.0.

For every base the generator knows under the old version (``cases.bases``: KubeRay v1.6.2's
``config/samples`` and the project's samples, with their ``managedBy`` and GCS FT variants), the
old build (``-dump-world``) creates the object through its API server part, reconciles it to a
fixpoint and dumps the whole world; the new build (``-upgrade``) loads that world, each ray.io
object read through the new CRD's storage decoding (pruning + structural defaulting, no
validation), and reconciles it to a fixpoint with fresh reconcilers (a restarted operator).
A control run loads the same world into the old build again: what an operator *restart* does,
so that what the upgrade adds can be told apart (a restart alone re-sends every Serve config:
the operator's cache of submitted configs lives in memory). See conformance/upgrade.go and
README.md, "The operator-upgrade case".

The Python side: ``diffing`` computes the RayCluster hash per version (``compare._python_hash``,
the encoder the comparison uses); each record carries both versions' hashes, whether they differ,
and the Go hashes they should equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance import cases as gen
from conformance import compare, harness

FROM, TO = "1.6.2", "1.7.0"
HASH_KEY = "ray.io/hash-without-replicas-and-workers-to-delete"
RECREATE_KEY = "ray.io/upgrade-strategy-recreate-hash"
REPORT = os.path.join(harness.CACHE, "upgrade-report.json")


def base_cases(version: str = FROM) -> list[dict[str, Any]]:
    """One case per base of ``version``'s generator: the object as a user applied it."""
    return [{"id": b.name, "version": version, "featureGates": {}, "env": {}, "kind": b.obj["kind"],
             "before": b.obj} for b in gen.bases(harness.src_dir(version))]


def _stream(binary: str, version: str, flag: str, lines: Sequence[dict[str, Any]],
            jobs: int | None = None) -> list[dict[str, Any]]:
    """``lines`` through ``binary -crds <version's CRDs> <flag>``, ``jobs`` processes at a time;
    the answers in input order (matched by id)."""
    jobs = jobs or max(1, min(os.cpu_count() or 1, 4))
    crds = os.path.join(harness.src_dir(version), "config", "crd", "bases")
    shards = [list(lines[i::jobs]) for i in range(jobs)]

    def one(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not shard:
            return []
        text = "\n".join(json.dumps(x) for x in shard)
        p = subprocess.run([binary, "-crds", crds, flag], input=text, text=True, capture_output=True,
                           check=False)
        if p.returncode != 0:
            raise RuntimeError(f"harness {flag} failed ({p.returncode}):\n{p.stderr[-4000:]}")
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]

    with ThreadPoolExecutor(jobs) as pool:
        by_id = {r["id"]: r for part in pool.map(one, shards) for r in part}
    return [by_id[x["id"]] for x in lines]


def dump_worlds(binary: str, cases: Sequence[dict[str, Any]], jobs: int | None = None,
                version: str = FROM) -> list[dict[str, Any]]:
    """Each case's converged world under the build ``binary`` (of ``version``)."""
    return _stream(binary, version, "-dump-world", cases, jobs)


def upgrade_worlds(binary: str, worlds: Sequence[dict[str, Any]], jobs: int | None = None,
                   version: str = TO) -> list[dict[str, Any]]:
    """What the build ``binary`` (of ``version``) does with each dumped world."""
    return _stream(binary, version, "-upgrade", worlds, jobs)


# ---- the Python side -----------------------------------------------------------------------------

def stored_object(world: dict[str, Any]) -> dict[str, Any] | None:
    """The base's own object as the old API server stored it (from the dumped world), without
    its status: what an upgrade analysis reads from a live cluster. Not the user's manifest:
    fields the old schema does not know were pruned on the way in (a manifest's
    ``gcsFaultToleranceOptions.backend`` is not in etcd after a v1.6.2 write)."""
    for o in world.get("objects") or []:
        if o.get("kind") == world.get("kind") and (o.get("metadata") or {}).get("name") == world.get("name") \
                and str(o.get("apiVersion", "")).startswith("ray.io/"):
            return {k: v for k, v in o.items() if k != "status"}
    return None


def python_hashes(kind: str, obj: dict[str, Any] | None) -> dict[str, str] | None:
    """diffing's RayCluster hash of ``obj`` under each version (RayService: of
    ``rayClusterConfig`` as the RayService controller hashes it; RayCluster: the Recreate hash),
    computed by the comparison's encoder (``compare._python_hash``, which calls diffing's
    ``recreate_hash_input`` and Go-JSON encoder); None for a RayJob (its cluster is not hashed)."""
    if kind not in ("RayService", "RayCluster") or obj is None:
        return None
    return {v: compare._python_hash({"kind": kind, "version": v, "after": obj}).get("hash", "")
            for v in (FROM, TO)}


# ---- one record per base --------------------------------------------------------------------------

def _go_hashes(kind: str, up: dict[str, Any]) -> dict[str, Any]:
    """The old build's hash as written (cluster annotation for a RayService, head pod annotation
    for a RayCluster) and the new build's hash of the same stored spec, for the base's own
    cluster(s)."""
    old, new = [], []
    for h in up.get("hashes") or []:
        if kind == "RayService" and (h.get("owner") or "").startswith("RayService/"):
            was, now = (h.get("before") or {}).get(HASH_KEY, ""), h.get("serviceGoal", "")
        elif kind == "RayCluster":
            was, now = (h.get("headBefore") or {}).get(RECREATE_KEY, ""), h.get("clusterGoal", "")
        else:
            continue
        if was:  # no cluster or no head pod (managedBy another controller): nothing to compare
            old.append(was)
            new.append(now)
    differs = any(a != b for a, b in zip(old, new, strict=True)) if old else None
    return {"old": old, "new": new, "differs": differs}


def effects(up: dict[str, Any]) -> dict[str, Any]:
    """What an operator run did to the world, comparable between two runs of the same world:
    objects deleted and changed by name (with their changed paths, status left out), created
    ones counted (their names end in random suffixes), Serve and job submissions."""
    out: dict[str, Any] = {}
    for kind, ch in sorted((up.get("objects") or {}).items()):
        e: dict[str, Any] = {}
        if ch.get("created"):
            e["created"] = len(ch["created"])
        if ch.get("deleted"):
            e["deleted"] = sorted(ch["deleted"])
        if ch.get("changed"):
            e["changed"] = dict(sorted(ch["changed"].items()))
        if e:
            out[kind] = e
    serve = up.get("serve") or {}
    if serve.get("submissions"):
        out["serve"] = {"submissions": serve["submissions"], "sameConfig": serve.get("sameConfig", 0)}
    if up.get("jobSubmissions"):
        out["jobSubmissions"] = up["jobSubmissions"]
    return out


def facts(eff: dict[str, Any]) -> list[str]:
    """``effects`` in a few words: "RayCluster: annotations, spec", "Gateway +1", "serve ×1"."""
    out = []
    for kind, e in eff.items():
        if kind == "serve":
            same = e["sameConfig"] == e["submissions"]
            out.append(f"serve x{e['submissions']}" + ("" if same else " (new config)"))
            continue
        if kind == "jobSubmissions":
            out.append(f"jobs x{e}")
            continue
        words = []
        if e.get("created"):
            words.append(f"+{e['created']}")
        if e.get("deleted"):
            words.append(f"-{len(e['deleted'])}")
        parts = set()
        for paths in (e.get("changed") or {}).values():
            for p in paths:
                head = p.split(".")[0].split("[")[0]
                parts.add(p.split("[")[0].split(".")[1] if head == "metadata" and "." in p else head)
        words += sorted(parts)
        out.append(f"{kind} {' '.join(words)}")
    return out


def _accel(extra: dict[str, str] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((extra or {}).items())) or "-"


def record(case: dict[str, Any], world: dict[str, Any], up: dict[str, Any],
           control: dict[str, Any] | None) -> dict[str, Any]:
    """What one base's upgrade did, in the report's terms."""
    kind = case["kind"]
    go = _go_hashes(kind, up) if not up.get("error") else {"old": [], "new": [], "differs": None}
    py = python_hashes(kind, stored_object(world))
    py_differs = None if py is None else py[FROM] != py[TO]
    rec: dict[str, Any] = {
        "base": case["id"], "kind": kind,
        "error": world.get("error") or up.get("error") or (control or {}).get("error") or "",
        "classification": up.get("classification") or "error",
        "restart": (control or {}).get("classification"),
        "clustersCreated": (up.get("clusters") or {}).get("created") or [],
        "clustersUpdated": (up.get("clusters") or {}).get("updated") or [],
        "clustersDeleted": (up.get("clusters") or {}).get("deleted") or [],
        "podsCreated": (up.get("pods") or {}).get("created") or {},
        "podsDeleted": (up.get("pods") or {}).get("deleted") or {},
        "serve": up.get("serve") or {},
        "extraAccelerators": (up.get("accelerators") or {}).get("extra") or {},
        "effects": effects(up),
        "facts": facts(effects(up)),
        "beyondRestart": None if control is None else effects(up) != effects(control),
        "changed": up.get("objects") or {},
        "schemaRead": up.get("schemaRead") or {},
        "storeDefaulted": world.get("storeDefaulted") or {},
        "events": up.get("events") or [],
        "converged": bool(world.get("converged")) and bool(up.get("converged")),
        "goHash": go,
        "pythonHash": py,
        "pythonHashDiffers": py_differs,
        # Python against Go: the old version's hash as KubeRay v1.6.2 wrote it, the new one as
        # KubeRay v1.7.0 computes it for the same stored object.
        "pythonMatchesGo": None if py is None or not go["old"] else
        {FROM: py[FROM] == go["old"][0], TO: py[TO] == go["new"][0]},
        "ms": {"dump": world.get("ms"), "upgrade": up.get("ms"), "restart": (control or {}).get("ms")},
        "hashes": up.get("hashes") or [],
    }
    return rec


def run(jobs: int | None = None, limit: int | None = None, control: bool = True,
        log: list[str] | None = None) -> dict[str, Any]:
    """Build both versions, run every base through dump → upgrade (and the restart control);
    the report. Raises :class:`harness.Unavailable` when a version cannot be built."""
    log = log if log is not None else []
    t0 = time.monotonic()
    old_bin = harness.build(log, FROM)
    new_bin = harness.build(log, TO)
    t1 = time.monotonic()
    cases = base_cases()[:limit] if limit else base_cases()
    worlds = dump_worlds(old_bin, cases, jobs)
    t2 = time.monotonic()
    ups = upgrade_worlds(new_bin, worlds, jobs)
    t3 = time.monotonic()
    controls: list[dict[str, Any] | None] = [None] * len(worlds)
    if control:
        controls = list(upgrade_worlds(old_bin, worlds, jobs, version=FROM))
    t4 = time.monotonic()
    records = [record(c, w, u, k) for c, w, u, k in zip(cases, worlds, ups, controls, strict=True)]
    return {"from": FROM, "to": TO, "records": records, "summary": summarize(records),
            "time": {"build": t1 - t0, "dump": t2 - t1, "upgrade": t3 - t2, "restart": t4 - t3,
                     "cases": len(cases)}, "log": log}


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts per kind and classification; the rebuilt ones; the Python agreement."""
    by = Counter((r["kind"], r["classification"]) for r in records)
    restart = Counter((r["kind"], r["restart"]) for r in records if r["restart"])
    rebuilt = [r["base"] for r in records if r["classification"] in ("new-cluster", "pods-recreated")]
    hashed = [r for r in records if r["pythonHashDiffers"] is not None and not r["error"]]
    agree_new = sum(1 for r in hashed if r["pythonHashDiffers"] == (r["classification"] == "new-cluster"))
    go_known = [r for r in hashed if r["goHash"]["differs"] is not None]
    agree_go = sum(1 for r in go_known if r["pythonHashDiffers"] == r["goHash"]["differs"])
    matches = [r["pythonMatchesGo"] for r in hashed if r["pythonMatchesGo"]]
    return {
        "bases": len(records),
        "errors": [r["base"] for r in records if r["error"]],
        "unconverged": [r["base"] for r in records if not r["converged"] and not r["error"]],
        "byKind": dict(Counter(r["kind"] for r in records)),
        "byClassification": {f"{k} {c}": n for (k, c), n in sorted(by.items())},
        "restartByClassification": {f"{k} {c}": n for (k, c), n in sorted(restart.items())},
        "beyondRestart": [r["base"] for r in records if r["beyondRestart"]],
        "rebuiltByKind": {f"{k} {c}": n for (k, c), n in sorted(by.items())
                          if c in ("new-cluster", "pods-recreated", "cluster-in-place")},
        "rebuilt": rebuilt,
        "goHashDiffers": sum(1 for r in go_known if r["goHash"]["differs"]),
        "goHashCompared": len(go_known),
        "pythonHashDiffers": sum(1 for r in hashed if r["pythonHashDiffers"]),
        "hashed": len(hashed),
        "pythonAgreesWithNewCluster": agree_new,
        "pythonAgreesWithGoHashChange": agree_go,
        "pythonMatchesGo": {v: sum(1 for m in matches if m[v]) for v in (FROM, TO)},
        "pythonComparedWithGo": len(matches),
        "msPerCase": _ms(records),
    }


def _ms(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    out = {}
    for step in ("dump", "upgrade", "restart"):
        vals = [r["ms"][step] for r in records if r["ms"].get(step) is not None]
        out[step] = round(sum(vals) / len(vals), 1) if vals else 0.0
    return out


def table(report: dict[str, Any]) -> list[str]:
    """The per-base table: base, kind, classification (and a restart's), clusters rebuilt, extra
    accelerators at the peak, the Python hash column."""
    rows = [("base", "kind", "upgrade", "restart", "clusters rebuilt", "extra accel.", "Go hash Δ",
             "Python hash 1.6.2≠1.7.0", "what changed (upgrade; * = not what a restart does)")]
    for r in report["records"]:
        pods = r["classification"] == "pods-recreated"
        rebuilt = ", ".join(r["clustersCreated"]) or ("pods" if pods else "-")
        rows.append((r["base"], r["kind"], r["classification"] + (" !" if r["error"] else ""),
                     r["restart"] or "-", rebuilt, _accel(r["extraAccelerators"]),
                     _yes(r["goHash"]["differs"]), _yes(r["pythonHashDiffers"]),
                     ("* " if r["beyondRestart"] else "") + "; ".join(r["facts"])))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _yes(v: bool | None) -> str:
    return "-" if v is None else "yes" if v else "no"


def write(report: dict[str, Any], path: str = REPORT) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return path
