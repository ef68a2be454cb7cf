"""RayCronJob changes (docs/semantics/raycronjob.md), built on KubeRay v1.7.0's two RayCronJob samples.

Until ``diffing/kinds.py`` lists the kind, the cases run the kind's analysis directly
(``ANALYSIS.run`` on a :class:`diffing.pipeline.Target`); the ones marked ``registered`` go
through ``diffing.analyze`` and run once it does. Citations: RCJC =
ray-operator/controllers/ray/raycronjob_controller.go at v1.7.0, VAL = .../utils/validation.go,
cron = github.com/robfig/cron/v3 v3.0.1. Numbers marked "probed" were observed by driving
KubeRay's own reconciler with a fake client and clock (the probe in the semantics page).
"""

from __future__ import annotations

import copy
import json
import shutil
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

import diffing
from diffing.engine import Engine
from diffing.kinds import NAMES
from diffing.kube import resources as cap
from diffing.kube.loading import load_documents
from diffing.kube.manifests import Manifest, strip_server_fields
from diffing.pipeline import Target
from diffing.policy import Policy, parse_headroom
from diffing.raycronjob import cron
from diffing.raycronjob.analyze import ANALYSIS, RayCronJobAnalysis
from diffing.raycronjob.capacity import catch_up_bound, overlap, per_day
from diffing.raycronjob.rules import CRON_FIELDS, CronCategory
from diffing.raycronjob.validation import MAX_CRON_NAME, known_zone
from diffing.rayjob.capacity import job_amounts
from diffing.report import ResourceReport
from diffing.versions import rules_for
from diffing.vocab import Rollout

ROOT = Path(__file__).resolve().parents[3]
UPSTREAM = ROOT / "samples" / "raycronjob-kuberay-v1.7.0"
PAIR = ROOT / "samples" / "raycronjob-gpu-every-6h"
CRD = ROOT / "scripts" / "crds" / "ray.io_raycronjobs.v1.7.0.yaml"
DATA_MODULE = ROOT / "diffing" / "data" / "raycronjob_1_7_0.py"
KUBERAY_SRC = ROOT / ".cache" / "conformance" / "src" / "ray-operator-v1.7.0"
GATE_ON = {"operator": {"featureGates": {"RayCronJob": True}}}
registered = pytest.mark.skipif("RayCronJob" not in NAMES,
                                reason="diffing/kinds.py does not list RayCronJob yet")
Edit = Callable[[dict[str, Any]], Any]


def _sample(name: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((UPSTREAM / name).read_text())
    return next(d for d in docs if isinstance(d, dict) and d.get("kind") == "RayCronJob")


EVERY_MINUTE = _sample("ray-cronjob.sample.yaml")        # "* * * * *", ttlSecondsAfterFinished 600
DAILY_TAIPEI = _sample("ray-cronjob-timezone.sample.yaml")  # "45 21 * * *", Asia/Taipei


def _edited(obj: Mapping[str, Any], *edits: Edit) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    for edit in edits:
        edit(out)
    return out


def _spec(key: str, value: Any) -> Edit:
    return lambda o: o["spec"].__setitem__(key, value)


def _tpl(key: str, value: Any) -> Edit:
    return lambda o: o["spec"]["jobTemplate"].__setitem__(key, value)


def _worker_limit(name: str, value: Any) -> Edit:
    def edit(o: dict[str, Any]) -> None:
        group = o["spec"]["jobTemplate"]["rayClusterSpec"]["workerGroupSpecs"][0]
        group["template"]["spec"]["containers"][0]["resources"]["limits"][name] = value
    return edit


def _manifest(obj: Mapping[str, Any] | None, source: str) -> Manifest | None:
    if obj is None:
        return None
    (doc,) = load_documents(yaml.safe_dump(dict(obj), sort_keys=False), source=source)
    return Manifest(strip_server_fields(doc.value), doc, source)


def _run(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, policy: Any = GATE_ON,
         headroom: Mapping[str, Any] | None = None) -> ResourceReport:
    """The kind's analysis on one RayCronJob, as the pipeline runs it (gate on unless told)."""
    engine = Engine(rules_for("1.7.0"), Policy.from_mapping(policy))
    b, a = _manifest(before, "before.yaml"), _manifest(after, "after.yaml")
    main = a or b
    assert main is not None
    return ANALYSIS.run(Target(engine, main.key, b, a, headroom=parse_headroom(headroom)))


def _codes(r: ResourceReport, severity: str | None = None) -> set[str]:
    return {f.code for f in r.findings if severity is None or f.severity == severity}


def _finding(r: ResourceReport, code: str) -> Any:
    (f,) = [f for f in r.findings if f.code == code]
    return f


def _one_run(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the RayJob kind says one RayJob of this template needs."""
    amounts, units = job_amounts(obj["spec"]["jobTemplate"])
    return cap.render_amounts(cap.positive(amounts), units=units)


# -- the generated schema data ------------------------------------------------------------------


def data_module_text(crd_text: str, zones: list[str]) -> str:
    """diffing/data/raycronjob_1_7_0.py from the vendored CRD and Go's zone database (the
    generator: ``python -c 'from tests.diffing.test_raycronjob import write_data_module as w; w()'``)."""
    from scripts.gen_kuberay_data import crd_schema_doc

    doc, _ = crd_schema_doc(yaml.load(crd_text, Loader=yaml.CSafeLoader))
    names = ",\n".join(f"    {json.dumps(z)}" for z in sorted(zones))
    return ('"""KubeRay v1.7.0 RayCronJob schema and Go 1.26\'s time zone names; generated, do not edit.\n\n'
            "SCHEMA_JSON: the RayCronJob CRD openAPIV3Schema per served API version (status dropped),\n"
            "shared subtrees under defs (scripts/gen_kuberay_data.crd_schema_doc of\n"
            "scripts/crds/ray.io_raycronjobs.v1.7.0.yaml; read by diffing.kube.schema.SchemaSet).\n"
            "TIME_ZONES: the zone names of Go 1.26's lib/time/zoneinfo.zip, the database that\n"
            "time/tzdata embeds in the operator (utils/validation.go:9). Regenerated and compared by\n"
            'tests/diffing/test_raycronjob.py (data_module_text).\n"""\n\n'
            f"SCHEMA_JSON = {json.dumps(json.dumps(doc, separators=(',', ':'), sort_keys=True))}\n\n"
            f"TIME_ZONES = (\n{names},\n)\n")


def _go_zones() -> list[str] | None:
    go = shutil.which("go")
    candidates = [Path(go).resolve().parents[1] / "lib" / "time" / "zoneinfo.zip"] if go else []
    candidates.append(Path("/usr/local/go/lib/time/zoneinfo.zip"))
    for path in candidates:
        if path.is_file():
            return [i.filename for i in zipfile.ZipFile(path).infolist() if not i.filename.endswith("/")]
    return None


def write_data_module() -> None:  # pragma: no cover - the generator, run by hand
    zones = _go_zones()
    assert zones is not None, "needs a Go toolchain (its lib/time/zoneinfo.zip)"
    DATA_MODULE.write_text(data_module_text(CRD.read_text(), zones))


def test_the_data_module_is_generated_from_the_vendored_crd_and_gos_zones() -> None:
    from diffing.data import raycronjob_1_7_0 as data

    zones = _go_zones() or list(data.TIME_ZONES)  # without Go, only the schema part is checked
    assert DATA_MODULE.read_text() == data_module_text(CRD.read_text(), zones)
    assert {"Asia/Taipei", "America/New_York", "UTC", "Etc/GMT+5"} <= set(data.TIME_ZONES)


@pytest.mark.skipif(not KUBERAY_SRC.is_dir(), reason="no KubeRay v1.7.0 source tree in .cache/conformance")
def test_the_vendored_crd_and_samples_are_kuberays_files_unchanged() -> None:
    assert CRD.read_bytes() == (KUBERAY_SRC / "config/crd/bases/ray.io_raycronjobs.yaml").read_bytes()
    for name in ("ray-cronjob.sample.yaml", "ray-cronjob-timezone.sample.yaml"):
        assert (UPSTREAM / name).read_bytes() == (KUBERAY_SRC / "config/samples" / name).read_bytes()


# -- the cron library (robfig/cron v3.0.1), against values the Go library printed -----------------

# (schedule, the first three activations after 2026-01-01T00:00:00Z in Unix seconds, None for
# "never" (Go's zero time), or the Go error text), printed by cron.ParseStandard / Schedule.Next.
GO_CRON = [
    ('* * * * *', (1767225660, 1767225720, 1767225780)),
    ('*/5 * * * *', (1767225900, 1767226200, 1767226500)),
    ('45 21 * * *', (1767303900, 1767390300, 1767476700)),
    ('0 0 30 2 *', None),
    ('0 0 31 4 *', None),
    ('0 0 29 2 *', (1835395200, 1961625600, 2087856000)),
    ('0 0 29 2 1', (1769990400, 1770595200, 1771200000)),
    ('0 9-17/2 * * 1-5', (1767258000, 1767265200, 1767272400)),
    ('0 0 1,15 * MON', (1767571200, 1768176000, 1768435200)),
    ('0 0 * JAN-MAR sun', (1767484800, 1768089600, 1768694400)),
    ('@daily', (1767312000, 1767398400, 1767484800)),
    ('@midnight', (1767312000, 1767398400, 1767484800)),
    ('@hourly', (1767229200, 1767232800, 1767236400)),
    ('@weekly', (1767484800, 1768089600, 1768694400)),
    ('@monthly', (1769904000, 1772323200, 1775001600)),
    ('@yearly', (1798761600, 1830297600, 1861920000)),
    ('@annually', (1798761600, 1830297600, 1861920000)),
    ('@every 90s', (1767225690, 1767225780, 1767225870)),
    ('@every 1h30m', (1767231000, 1767236400, 1767241800)),
    ('@every 100ms', (1767225601, 1767225602, 1767225603)),
    ('@every 1.5s', (1767225601, 1767225602, 1767225603)),
    ('@every ', 'failed to parse duration @every : time: invalid duration ""'),
    ('@every -1s', (1767225601, 1767225602, 1767225603)),
    ('@daily ', 'unrecognized descriptor: @daily '),
    (' @daily', 'expected exactly 5 fields, found 1: [@daily]'),
    ('* * * *', 'expected exactly 5 fields, found 4: [* * * *]'),
    ('* * * * * *', 'expected exactly 5 fields, found 6: [* * * * * *]'),
    ('', 'empty spec string'),
    ('60 * * * *', 'end of range (60) above maximum (59): 60'),
    ('5-2 * * * *', 'beginning of range (5) beyond end of range (2): 5-2'),
    ('*/0 * * * *', 'step of range should be a positive number: */0'),
    ('1-2-3 * * * *', 'too many hyphens: 1-2-3'),
    ('1/2/3 * * * *', 'too many slashes: 1/2/3'),
    ('-1 * * * *', 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ('+5 * * * *', (1767225900, 1767229500, 1767233100)),
    ('abc * * * *', 'failed to parse int from abc: strconv.Atoi: parsing "abc": invalid syntax'),
    (', * * * *', None),
    ('0 0 ? * ?', (1767312000, 1767398400, 1767484800)),
    ('0 0 */1 * 1', (1767571200, 1768176000, 1768780800)),
    ('0 0 1-31 * 1', (1767312000, 1767398400, 1767484800)),
    ('0 0 1 * 1', (1767571200, 1768176000, 1768780800)),
    ('*/7 */5 */3 */2 *', (1767226020, 1767226440, 1767226860)),
    ('30 2 * * *', (1767234600, 1767321000, 1767407400)),
    ('0 0 L * *', 'failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax'),
    ('@reboot', 'unrecognized descriptor: @reboot'),
    ('0 0 1 13 *', 'end of range (13) above maximum (12): 13'),
    ('0 0 0 * *', 'beginning of range (0) below minimum (1): 0'),
    ('0 24 * * *', 'end of range (24) above maximum (23): 24'),
    ('0 0 * * 7', 'end of range (7) above maximum (6): 7'),
]


@pytest.mark.parametrize(("spec", "want"), GO_CRON, ids=[repr(s) for s, _ in GO_CRON])
def test_parse_and_next_match_the_go_library(spec: str, want: Any) -> None:
    if isinstance(want, str):
        with pytest.raises(cron.CronError) as err:
            cron.parse_standard(spec)
        assert str(err.value) == want
        return
    s = cron.parse_standard(spec)
    got: list[int] = []
    t: int | None = cron.REFERENCE
    while len(got) < 3:
        assert t is not None
        t = cron.next_after(s, t)
        if t is None:
            break
        got.append(t)
    assert (tuple(got) if got else None) == want


def test_a_schedule_change_from_daily_to_every_6_hours_starts_4_runs_at_once() -> None:
    # probed: the change landing at 20:00 Taipei time created 4 RayJobs (00:00, 06:00, 12:00, 18:00)
    def bound(old: str, new: str) -> tuple[int, bool] | None:
        return catch_up_bound(cron.parse_standard(old), cron.parse_standard(new))

    assert bound("45 21 * * *", "0 */6 * * *") == (4, False)
    assert bound("0 0 * * *", "*/5 * * * *") == (288, False)
    assert bound("* * * * *", "@hourly") == (1, False)
    assert bound("@yearly", "* * * * *") == (5000, True)  # a lower bound: the sample stops at 5,000
    assert bound("0 0 30 2 *", "* * * * *") is None  # the old schedule never ran


def test_runs_are_counted_once_per_minute_as_kuberay_names_them() -> None:
    # RCJC:160-168: <name>-<minute>; a second activation in the same minute meets AlreadyExists
    # (RCJC:119-129). probed: "@every 20s" gave one RayJob a minute.
    every_20s = cron.parse_standard("@every 20s")
    assert per_day(every_20s) == (1441, False)  # 00:00:20 and every minute up to 24:00:00
    assert per_day(cron.parse_standard("*/5 * * * *")) == (288, False)
    assert overlap(cron.parse_standard("* * * * *"), 600) == (10, False)
    assert overlap(cron.parse_standard("45 21 * * *"), 600) == (1, False)


# -- the feature gate ---------------------------------------------------------------------------


def test_without_the_feature_gate_nothing_runs_and_the_report_says_why() -> None:
    # main.go:353-359 sets the controller up only with the gate; features.go:110 leaves it off.
    r = _run(None, EVERY_MINUTE, policy=None)
    assert (r.action, r.rollout, r.decision) == ("created", Rollout.NONE, "approve")
    assert r.capacity.extra == {} and "main.go:353-359" in r.reasons[0]
    f = _finding(r, "raycronjob-feature-gate-off")
    assert f.severity == "warning" and "operator.featureGates.RayCronJob: true" in f.message
    assert _codes(r) == {"raycronjob-feature-gate-off"}  # nothing about runs that never happen


def test_without_the_gate_a_schedule_kuberay_would_reject_is_only_a_warning() -> None:
    r = _run(None, _edited(EVERY_MINUTE, _spec("schedule", "every minute")), policy=None)
    assert (r.rollout, r.decision) == (Rollout.NONE, "approve")
    assert _finding(r, "raycronjob-invalid-schedule").severity == "warning"


def test_without_the_gate_the_api_server_still_rejects_what_the_crd_forbids() -> None:
    r = _run(EVERY_MINUTE, _edited(EVERY_MINUTE, _spec("timeZone", "")), policy=None)
    assert (r.rollout, r.decision) == (Rollout.NOT_APPLIED, "hold")
    assert _finding(r, "schema-violation").path == "spec.timeZone"


# -- create, suspend, resume, delete ------------------------------------------------------------


@pytest.mark.parametrize("sample", [EVERY_MINUTE, DAILY_TAIPEI], ids=["every-minute", "timezone"])
def test_kuberay_samples_are_accepted_and_a_create_costs_one_run(sample: dict[str, Any]) -> None:
    r = _run(None, sample)
    assert (r.action, r.rollout, r.decision) == ("created", Rollout.CREATE, "approve")
    assert _codes(r, "error") == set()
    assert r.capacity.extra == _one_run(sample) == {"cpu": "900m", "memory": "5576Mi"}
    assert "RCJC:102-112" in r.reasons[0]


def test_the_every_minute_sample_keeps_ten_clusters_alive() -> None:
    # ttlSecondsAfterFinished 600 / one RayJob a minute; no concurrency policy (RCJC:114-129)
    f = _finding(_run(None, EVERY_MINUTE), "raycronjob-runs-overlap")
    assert f.path == "spec.jobTemplate.ttlSecondsAfterFinished" and "10 RayClusters" in f.message
    assert "raycronjob-runs-overlap" not in _codes(_run(None, DAILY_TAIPEI))


def test_a_created_suspended_cronjob_runs_nothing() -> None:
    r = _run(None, _edited(EVERY_MINUTE, _spec("suspend", True)))
    assert r.rollout == Rollout.CREATE and r.capacity.extra == {} and "suspended" in r.reasons[0]


def test_suspend_stops_new_runs_and_leaves_the_running_one_alone() -> None:
    # RCJC:84-90; TYPES:21-24 -- unlike a RayJob's suspend, no work is lost: approve
    r = _run(EVERY_MINUTE, _edited(EVERY_MINUTE, _spec("suspend", True)))
    assert (r.rollout, r.decision, r.capacity.extra) == (Rollout.SUSPEND, "approve", {})
    assert [c.category for c in r.changes] == [CronCategory.SUSPEND]
    assert "a run in progress goes on" in r.reasons[0]


def test_suspend_false_is_the_same_as_absent() -> None:
    r = _run(EVERY_MINUTE, _edited(EVERY_MINUTE, _spec("suspend", False)))
    assert r.rollout == Rollout.NONE and [c.category for c in r.changes] == [CronCategory.NO_OP]


def test_resume_catches_up_every_missed_activation() -> None:
    # probed: "*/5" resumed after an hour created 12 RayJobs back to back
    r = _run(_edited(EVERY_MINUTE, _spec("suspend", True)), EVERY_MINUTE)
    assert (r.rollout, r.capacity.extra) == (Rollout.RESUME, _one_run(EVERY_MINUTE))
    f = _finding(r, "raycronjob-catch-up")
    assert f.severity == "warning" and "up to 1440 activations a day" in f.message


def test_a_resume_that_needs_more_accelerators_than_the_headroom_is_held() -> None:
    gpu = _edited(EVERY_MINUTE, _worker_limit("nvidia.com/gpu", 2))
    r = _run(_edited(gpu, _spec("suspend", True)), gpu, headroom={"nvidia.com/gpu": 1})
    assert (r.rollout, r.decision) == (Rollout.RESUME, "hold")
    assert r.capacity.extra["nvidia.com/gpu"] == 2


def test_deleting_the_cronjob_deletes_its_running_rayjobs() -> None:
    r = _run(EVERY_MINUTE, None)
    assert (r.rollout, r.decision) == (Rollout.DELETE, "approve")
    assert "RCJC:185-188" in r.reasons[0]
    assert "suspend: true first" in _finding(r, "raycronjob-delete-stops-runs").message


# -- jobTemplate, schedule, metadata --------------------------------------------------------------


def test_a_template_change_reaches_only_the_next_run() -> None:
    # RCJC:182 copies the template at creation; the RBAC allows only create on rayjobs (RCJC:50)
    after = _edited(DAILY_TAIPEI, lambda o: o["spec"]["jobTemplate"].__setitem__("entrypoint", "python y.py"))
    r = _run(DAILY_TAIPEI, after)
    assert (r.rollout, r.decision, r.capacity.extra) == (Rollout.NEXT_RUN, "approve", {})
    assert [(str(c.path), c.category) for c in r.changes] == [
        (str(("spec", "jobTemplate", "entrypoint")), CronCategory.NEXT_RUN)]
    assert "keep the old template" in r.reasons[0]


def test_a_template_change_needs_what_the_new_run_adds() -> None:
    after = _edited(DAILY_TAIPEI, _worker_limit("nvidia.com/gpu", 2))
    r = _run(DAILY_TAIPEI, after, headroom={"nvidia.com/gpu": 1})
    assert (r.rollout, r.decision) == (Rollout.NEXT_RUN, "hold")
    assert r.capacity.extra == {"nvidia.com/gpu": 2}
    assert r.capacity.peak["nvidia.com/gpu"] == 2 and r.capacity.peak["cpu"] == "900m"
    assert _run(DAILY_TAIPEI, after).decision == "approve"  # no known headroom: nothing to hold on


def test_a_schedule_change_moves_the_next_run_and_may_start_one_at_once() -> None:
    r = _run(EVERY_MINUTE, _edited(EVERY_MINUTE, _spec("schedule", "@hourly")))
    assert r.rollout == Rollout.NEXT_RUN and [c.category for c in r.changes] == [CronCategory.APPLIES_NOW]
    assert _finding(r, "raycronjob-catch-up").severity == "info"
    assert r.capacity.extra == _one_run(EVERY_MINUTE)


def test_a_time_zone_change_is_a_schedule_change() -> None:
    r = _run(DAILY_TAIPEI, _edited(DAILY_TAIPEI, _spec("timeZone", "America/New_York")))
    assert r.rollout == Rollout.NEXT_RUN and [c.category for c in r.changes] == [CronCategory.APPLIES_NOW]


def test_labels_and_annotations_do_not_reach_the_rayjobs() -> None:
    labelled = _edited(DAILY_TAIPEI, lambda o: o["metadata"].__setitem__("labels", {"team": "a"}))
    r = _run(DAILY_TAIPEI, labelled)
    assert (r.rollout, r.decision) == (Rollout.NONE, "approve") and "RCJC:171-181" in r.reasons[0]


def test_the_golden_pair_with_the_gate_on_holds_four_gpus() -> None:
    pol = yaml.safe_load((PAIR / "policy.yaml").read_text())
    before, after = (yaml.safe_load_all((PAIR / n).read_text()) for n in ("before.yaml", "after.yaml"))
    b = next(d for d in before if d and d.get("kind") == "RayCronJob")
    a = next(d for d in after if d and d.get("kind") == "RayCronJob")
    r = _run(b, a, policy=pol, headroom={"nvidia.com/gpu": 2})
    want = json.loads((PAIR / "expected-gate-on.json").read_text())["resources"][0]
    got = r.to_dict()
    # the same report as the reviewed golden, but for the source names and lines of this re-dump
    for key in ("rollout", "decision", "reasons", "capacity", "nextSteps"):
        assert got[key] == want[key], key
    assert [(c["path"], c["category"]) for c in got["changes"]] == \
        [(c["path"], c["category"]) for c in want["changes"]]
    assert [(f["code"], f["severity"]) for f in got["findings"]] == \
        [(f["code"], f["severity"]) for f in want["findings"]]


# -- what KubeRay rejects (VAL:968-1003) ----------------------------------------------------------


@pytest.mark.parametrize(("schedule", "why"), [
    ("*/5 * * *", "expected exactly 5 fields, found 4"),
    ("0 0 L * *", "failed to parse int from L"),
    ("CRON_TZ=UTC * * * * *", "contains TZ"),
    ("@reboot", "unrecognized descriptor: @reboot"),
])
def test_a_schedule_kuberay_rejects_is_not_applied_and_held(schedule: str, why: str) -> None:
    r = _run(EVERY_MINUTE, _edited(EVERY_MINUTE, _spec("schedule", schedule)))
    assert (r.rollout, r.decision) == (Rollout.NOT_APPLIED, "hold")
    f = _finding(r, "raycronjob-invalid-schedule")
    assert f.severity == "error" and why in f.message and "InvalidRayCronJobSpec" in f.message
    assert any("InvalidRayCronJobSpec" in x and "next edit" in x for x in r.reasons)


def test_not_applied_follows_the_policy() -> None:
    after = _edited(EVERY_MINUTE, _spec("schedule", "bogus"))
    r = _run(EVERY_MINUTE, after, policy={**GATE_ON, "notApplied": "warn", "holdOnErrors": False})
    assert (r.rollout, r.decision) == (Rollout.NOT_APPLIED, "approve")


def test_fixing_a_rejected_spec_resumes_with_a_catch_up() -> None:
    # unlike a RayJob's ValidationFailed, nothing is recorded for good (RCJC:77-82)
    r = _run(_edited(EVERY_MINUTE, _spec("schedule", "bogus")), EVERY_MINUTE)
    assert r.rollout == Rollout.RESUME and "raycronjob-catch-up" in _codes(r)
    assert r.reasons[0].startswith("the spec is valid again")


@pytest.mark.parametrize(("zone", "ok"), [
    ("Asia/Taipei", True), ("Etc/GMT-8", True), ("UTC", True), ("Local", True),
    ("asia/taipei", False), ("Mars/Olympus", False), ("../etc/passwd", False), ("Asia/Taipei ", False)])
def test_time_zones_are_the_ones_go_knows(zone: str, ok: bool) -> None:
    assert known_zone(zone) is ok  # probed: KubeRay rejects "asia/taipei" (unknown time zone)
    r = _run(DAILY_TAIPEI, _edited(DAILY_TAIPEI, _spec("timeZone", zone)))
    assert (r.rollout == Rollout.NOT_APPLIED) is (not ok)
    assert ("raycronjob-invalid-time-zone" in _codes(r, "error")) is (not ok)


def test_the_name_is_limited_to_36_characters() -> None:
    def named(n: str) -> Edit:
        return lambda o: o["metadata"].__setitem__("name", n)
    assert MAX_CRON_NAME == 36  # constant.go:382-385
    assert _run(None, _edited(DAILY_TAIPEI, named("c" * 36))).rollout == Rollout.CREATE
    r = _run(None, _edited(DAILY_TAIPEI, named("c" * 37)))
    assert r.rollout == Rollout.NOT_APPLIED and _codes(r, "error") == {"raycronjob-name-too-long"}
    assert not any("KubeRay creates its first RayJob" in x for x in r.reasons)


def test_a_name_that_is_no_dns1035_label_makes_every_rayjob_fail() -> None:
    # not checked by ValidateRayCronJobSpec; the RayJob controller rejects each child (VAL:537-539)
    r = _run(None, _edited(DAILY_TAIPEI, lambda o: o["metadata"].__setitem__("name", "nightly.train")))
    assert (r.rollout, r.decision) == (Rollout.CREATE, "hold")
    assert _finding(r, "raycronjob-child-name").severity == "error"


def test_an_unchanged_cronjob_is_not_judged() -> None:
    # nothing is applied, so nothing is reported, however bad the object already is
    bad = _edited(DAILY_TAIPEI, lambda o: o["metadata"].__setitem__("name", "nightly.train"),
                  _spec("schedule", "0 0 30 2 *"))
    r = _run(bad, bad)
    assert (r.action, r.rollout, r.decision, r.findings) == ("unchanged", Rollout.NONE, "approve", ())


def test_the_template_is_checked_with_the_rayjob_rules() -> None:
    # VAL:993-1000 runs ValidateRayJobSpec on the template
    after = _edited(DAILY_TAIPEI, _tpl("suspend", True), _tpl("shutdownAfterJobFinishes", False),
                    lambda o: o["spec"]["jobTemplate"].pop("ttlSecondsAfterFinished"))
    r = _run(DAILY_TAIPEI, after)
    assert r.rollout == Rollout.NOT_APPLIED
    f = _finding(r, "rayjob-suspend-without-shutdown")
    assert f.path == "spec.jobTemplate.suspend" and "invalid RayJob template" in f.message


def test_the_template_carries_the_rayjob_crds_cel_and_transition_rules() -> None:
    half = {"onSuccess": {"policy": "DeleteCluster"}}  # needs onFailure too (CRD:124-130)
    r = _run(DAILY_TAIPEI, _edited(DAILY_TAIPEI, _tpl("deletionStrategy", half)))
    assert r.rollout == Rollout.NOT_APPLIED
    assert _finding(r, "schema-violation").path == "spec.jobTemplate.deletionStrategy"
    kueue = _edited(DAILY_TAIPEI, _tpl("managedBy", "kueue.x-k8s.io/multikueue"))
    r = _run(kueue, _edited(DAILY_TAIPEI, _tpl("managedBy", "ray.io/kuberay-operator")))
    assert r.rollout == Rollout.NOT_APPLIED and "immutable" in _finding(r, "schema-violation").message


# -- what the runs leave behind ----------------------------------------------------------------


def test_a_template_without_cleanup_piles_up_clusters() -> None:
    no_cleanup = (_tpl("shutdownAfterJobFinishes", False),
                  lambda o: o["spec"]["jobTemplate"].pop("ttlSecondsAfterFinished"))
    r = _run(None, _edited(DAILY_TAIPEI, *no_cleanup))
    assert (_finding(r, "raycronjob-clusters-accumulate").severity, r.decision) == ("warning", "approve")
    r = _run(None, _edited(DAILY_TAIPEI, *no_cleanup, _worker_limit("nvidia.com/gpu", 1)))
    assert (_finding(r, "raycronjob-clusters-accumulate").severity, r.decision) == ("error", "hold")


def test_an_impossible_date_runs_once_at_once() -> None:
    # cron spec.go:87-93 returns the zero time; RCJC:108-112 creates its RayJob (probed)
    r = _run(None, _edited(DAILY_TAIPEI, _spec("schedule", "0 0 30 2 *")))
    assert (r.rollout, r.decision) == (Rollout.CREATE, "hold")
    assert r.capacity.extra == _one_run(DAILY_TAIPEI)
    f = _finding(r, "raycronjob-never-fires")
    assert "raycronjob-timezone-sample--1035593280" in f.message and "suspend: true" in f.message
    assert _run(None, _edited(DAILY_TAIPEI, _spec("schedule", "0 0 30 2 *"), _spec("suspend", True))
                ).decision == "approve"


def test_a_template_for_another_controller_or_suspended_runs_nothing_here() -> None:
    for edit, code in ((_tpl("managedBy", "kueue.x-k8s.io/multikueue"), "managed-by-other-controller"),
                       (_tpl("suspend", True), "created-suspended")):
        r = _run(None, _edited(DAILY_TAIPEI, edit))
        assert r.rollout == Rollout.CREATE and r.capacity.extra == {} and code in _codes(r)


def test_the_rayjob_kinds_template_checks_apply_to_the_template() -> None:
    after = _edited(DAILY_TAIPEI, lambda o: o["spec"]["jobTemplate"]["rayClusterSpec"].__setitem__(
        "upgradeStrategy", {"type": "Recreate"}))
    f = _finding(_run(None, after), "rayjob-upgrade-strategy")
    assert f.path == "spec.jobTemplate.rayClusterSpec.upgradeStrategy.type" and "jobTemplate's" in f.message


def test_every_rule_cites_the_controller_and_every_hold_names_real_categories() -> None:
    assert set(CRON_FIELDS) == {"schedule", "timeZone", "suspend", "jobTemplate"}
    assert all("RCJC:" in rule.source for rule in CRON_FIELDS.values())
    categories = {c.value for c in CronCategory}
    for rollout, held in RayCronJobAnalysis.holding.items():
        assert rollout in set(Rollout) and set(held) <= categories


# -- through diffing.analyze, once the kind is registered -----------------------------------------


@registered
@pytest.mark.parametrize("name", ["ray-cronjob.sample.yaml", "ray-cronjob-timezone.sample.yaml"])
def test_the_pipeline_analyses_kuberays_samples(name: str) -> None:
    text = (UPSTREAM / name).read_text()
    report = diffing.analyze("", text)
    (r,) = report.resources
    assert (r.kind, r.rollout, report.not_analysed) == ("RayCronJob", Rollout.NONE, {"ConfigMap": 1})
    report = diffing.analyze("", text, policy=GATE_ON)
    assert report.resources[0].rollout == Rollout.CREATE and report.decision == "approve"
    assert diffing.analyze(text, "", policy=GATE_ON).resources[0].rollout == Rollout.DELETE


@registered
def test_the_pipeline_reproduces_the_gate_on_golden() -> None:
    b, a = (PAIR / "before.yaml").read_text(), (PAIR / "after.yaml").read_text()
    report = diffing.analyze([("before.yaml", b)], [("after.yaml", a)],
                             policy=yaml.safe_load((PAIR / "policy.yaml").read_text()),
                             headroom={"nvidia.com/gpu": 2})
    assert report.to_dict() == json.loads((PAIR / "expected-gate-on.json").read_text())
    assert diffing.render_markdown(report) == (PAIR / "expected-gate-on.md").read_text()
