"""Conformance: the Python prediction against KubeRay v1.7.0's own reconcilers (conformance/).

    python scripts/conformance.py run [--seed 7] [--count 2000] [--jobs N]   the full run
    python scripts/conformance.py show 'project:gpu-image-bump/before.yaml|image.all'   one case, both answers
    python scripts/conformance.py list-mutations
    ... run --kuberay 1.6.2 / show --kuberay 1.6.2 ID: the same against KubeRay v1.6.2
    python scripts/conformance.py upgrade [--limit N] [--no-restart]   the operator-upgrade case:
        every base created by v1.6.2, then reconciled by v1.7.0 (conformance/upgrade.py); writes
        .cache/conformance/upgrade-report.json

``run`` prints the agreement per outcome field and writes every disagreement to
.cache/conformance/report.json and report.md; it exits 1 when a disagreement is not covered by
conformance/limits.json. A case id is ``BASE|MUTATION[+MUTATION...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from conformance import cases as gen  # noqa: E402
from conformance import compare, harness  # noqa: E402
from conformance import upgrade as upg  # noqa: E402


def _prepare(version: str = "1.7.0") -> tuple[str, list[str]]:
    log: list[str] = []
    try:
        binary = harness.build(log, version)
    except harness.Unavailable as exc:
        sys.exit(f"conformance not run: {exc}")
    return binary, log


def cmd_run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    binary, log = _prepare(args.version)
    t1 = time.monotonic()
    cases = gen.generate(harness.src_dir(args.version), args.seed, args.count, args.version)
    t2 = time.monotonic()
    results = harness.run(binary, cases, args.jobs, args.version)
    t3 = time.monotonic()
    report = compare.evaluate(cases, results, compare.load_limits(version=args.version))
    t4 = time.monotonic()
    for line in log:
        print(line)
    kinds: dict[str, int] = {}
    for c in cases:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    unconverged = sum(1 for r in results.values() if not r.get("error") and not r.get("converged"))
    print(f"cases: {len(cases)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); "
          f"not run by the oracle: {len(report['skipped'])}; no fixpoint within the round limit: "
          f"{unconverged}")
    print(f"time: build {t1 - t0:.1f} s, generate {t2 - t1:.1f} s, oracle {t3 - t2:.1f} s "
          f"({1000 * (t3 - t2) / max(1, len(cases)):.0f} ms/case wall), prediction+compare {t4 - t3:.1f} s")
    print("agreement per outcome field:")
    for field, a in report["agreement"].items():
        print(f"  {field:14} {a['agree']:5}/{a['of']:<5} {100 * a['agree'] / max(1, a['of']):6.2f} %")
    by: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for d in report["disagreements"]:
        key = (d["field"], d["kind"], json.dumps(d["python"]), json.dumps(d["oracle"]))
        by.setdefault(key, []).append(d)
    limits_file = os.path.relpath(compare.limits_path(args.version), ROOT)
    print(f"disagreements: {len(report['disagreements'])} "
          f"({len(report['unexplained'])} not covered by {limits_file})")
    for (field, kind, p, o), ds in sorted(by.items(), key=lambda kv: -len(kv[1])):
        lim = ds[0]["limit"] or "UNEXPLAINED"
        print(f"  {len(ds):4}  {field:12} {kind:10} python={p} oracle={o}  [{lim}]  e.g. {ds[0]['id']}")
    os.makedirs(harness.CACHE, exist_ok=True)
    suffix = "" if args.version == "1.7.0" else f"-v{args.version}"
    with open(os.path.join(harness.CACHE, f"report{suffix}.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(harness.CACHE, f"report{suffix}.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report))
    with open(os.path.join(harness.CACHE, f"results{suffix}.jsonl"), "w", encoding="utf-8") as f:
        for r in results.values():
            f.write(json.dumps(r) + "\n")
    print(f"report: {os.path.join(harness.CACHE, f'report{suffix}.md')}")
    return 1 if report["unexplained"] else 0


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Conformance report", "", "| field | agree | of | % |", "| --- | --- | --- | --- |"]
    for field, a in report["agreement"].items():
        lines.append(f"| {field} | {a['agree']} | {a['of']} | {100 * a['agree'] / max(1, a['of']):.2f} |")
    lines += ["", "## Disagreements", ""]
    for d in report["disagreements"]:
        small = compare.minimal(d, report)
        lines.append(f"- `{d['id']}` **{d['field']}**: python `{json.dumps(d['python'])}`, oracle "
                     f"`{json.dumps(d['oracle'])}` — limit: {d['limit'] or 'NONE'}"
                     + (f" — minimal: `{small}`" if small and small != d["id"] else ""))
    lines += ["", "## Not run by the oracle", ""]
    lines += [f"- `{s['id']}`: {s['why']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def cmd_show(args: argparse.Namespace) -> int:
    binary, _ = _prepare(args.version)
    base_name, _, muts = args.id.partition("|")
    base = next((b for b in gen.bases(harness.src_dir(args.version)) if b.name == base_name), None)
    if base is None:
        sys.exit(f"no base {base_name!r}")
    case = gen.make_case(base, tuple(m for m in muts.split("+") if m), args.seed, args.version)
    if case is None:
        sys.exit("the mutations do not apply to this base (or change nothing)")
    result = harness.run(binary, [case], 1, args.version)[case["id"]]
    py = compare.predict(case)
    orc = compare.oracle_view(result)
    print(json.dumps({"case": {k: case[k] for k in ("id", "kind", "featureGates", "env", "mutations")},
                      "python": {k: v for k, v in py.items() if k != "hashInput"},
                      "oracle": {k: v for k, v in orc.items() if k != "hashInput"},
                      "disagreements": compare.compare(case, py, orc),
                      "oracleResult": {k: v for k, v in result.items() if k not in ("hash",)}}, indent=1))
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            json.dump(case, f)
    return 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    log: list[str] = []
    try:
        report = upg.run(args.jobs, args.limit, control=not args.no_restart, log=log)
    except harness.Unavailable as exc:
        sys.exit(f"upgrade case not run: {exc}")
    for line in log:
        print(line)
    for line in upg.table(report):
        print(line)
    s, t = report["summary"], report["time"]
    print(f"\nbases: {s['bases']} ({', '.join(f'{k} {n}' for k, n in sorted(s['byKind'].items()))}); "
          f"errors: {len(s['errors'])}; no fixpoint: {len(s['unconverged'])}")
    print("KubeRay v1.7.0 on v1.6.2's objects, per kind and classification:")
    for key, n in s["byClassification"].items():
        print(f"  {n:4}  {key}")
    if s["restartByClassification"]:
        print("a restart of v1.6.2 on the same objects (the control):")
        for key, n in s["restartByClassification"].items():
            print(f"  {n:4}  {key}")
        print(f"upgrade differs from a restart: {len(s['beyondRestart'])}")
    print(f"rebuilt (new cluster or pods recreated): {len(s['rebuilt'])}")
    print(f"Go hash of the same stored spec differs v1.6.2 -> v1.7.0: "
          f"{s['goHashDiffers']}/{s['goHashCompared']}")
    print(f"Python: hash under 1.6.2 vs 1.7.0 differs: {s['pythonHashDiffers']}/{s['hashed']}; agrees "
          f"with the oracle's new-cluster: {s['pythonAgreesWithNewCluster']}/{s['hashed']}, with the Go "
          f"hash change: {s['pythonAgreesWithGoHashChange']}/{s['goHashCompared']}; equals Go's hash: "
          + ", ".join(f"v{v} {n}/{s['pythonComparedWithGo']}" for v, n in s["pythonMatchesGo"].items()))
    print(f"time: build {t['build']:.1f} s, dump {t['dump']:.1f} s, upgrade {t['upgrade']:.1f} s, "
          f"restart {t['restart']:.1f} s; per case (ms, in-process): {s['msPerCase']}")
    print(f"report: {upg.write(report)}")
    return 1 if s["errors"] else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seed", type=int, default=7)
    r.add_argument("--count", type=int, default=2000)
    r.add_argument("--jobs", type=int, default=None)
    s = sub.add_parser("show")
    for q in (r, s):
        q.add_argument("--kuberay", dest="version", default="1.7.0", choices=harness.VERSIONS,
                       help="the KubeRay version both sides answer for (1.6.2: built from the Go proxy)")
    s.add_argument("id")
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--write", help="also write the case as JSON here")
    sub.add_parser("list-mutations")
    u = sub.add_parser("upgrade", help="the operator-upgrade case: v1.6.2's objects under v1.7.0")
    u.add_argument("--jobs", type=int, default=None)
    u.add_argument("--limit", type=int, default=None, help="only the first N bases")
    u.add_argument("--no-restart", action="store_true", help="skip the v1.6.2 restart control")
    args = p.parse_args()
    if args.cmd == "run":
        return cmd_run(args)
    if args.cmd == "show":
        return cmd_show(args)
    if args.cmd == "upgrade":
        return cmd_upgrade(args)
    for name, m in gen.CATALOGUE.items():
        print(f"{name:40} {','.join(m.kinds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
