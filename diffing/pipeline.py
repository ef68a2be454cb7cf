"""One pipeline for every kind: pair the objects of both sides, run each through the stages, decide.

:func:`analyze` reads both sides, pairs the objects by (kind, namespace, name) and runs each
pair through :meth:`Analysis.run`; the report's decision is the strictest of its objects'. A
kind (registered in :mod:`diffing.kinds`) subclasses :class:`Analysis` and supplies only what
differs: defaulting, the field diff and its categories, the schema and operator validation it
runs, its rollout, capacity arithmetic, checks, holds and ways out. What every kind shares --
the order of the stages, the validation gate, create/delete/update, duplicates, the sorting
of findings, the report -- is here once.

The stages, in the operator's order (docs/semantics/rayservice.md §1.4): changes → validation
(the API server first; the operator only sees an object the API server stored) → rollout →
capacity → findings → decision → ways out.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from functools import cached_property

from diffing.engine import Engine
from diffing.environments import rank as environment_rank
from diffing.errors import ManifestError
from diffing.flux import advice as flux_advice
from diffing.flux import not_applied as flux_not_applied
from diffing.flux import not_pruned as flux_not_pruned
from diffing.flux import reason as flux_reason
from diffing.hints import Any, ClassVar
from diffing.holds import (
    NOT_APPLIED_HOLD,
    NOT_APPLIED_WARN,
    duplicate_findings,
    error_hold,
    known_headroom,
    located,
    replacement_reason,
)
from diffing.kinds import BY_NAME, NAMES_TEXT, ORDER
from diffing.kube.diff import Difference
from diffing.kube.loading import Limits
from diffing.kube.manifests import (
    Duplicate,
    Ident,
    Manifest,
    ObjectKey,
    Texts,
    changed_others,
    collect_all,
    crd_schemas,
)
from diffing.kube.paths import Path
from diffing.kube.resources import human
from diffing.kube.schema import Schema, SchemaSet, ratchet, transition_errors, validate, version_errors
from diffing.kube.values import dig
from diffing.live import LiveCluster, live_key
from diffing.managed import external_manager
from diffing.policy import Policy, parse_headroom
from diffing.record import Record, set_field
from diffing.report import (
    APPROVE,
    HOLD,
    IGNORE,
    SEVERITY_ORDER,
    Capacity,
    Change,
    Finding,
    Report,
    ResourceReport,
    WayOut,
    by_actor,
)
from diffing.versions import DEFAULT, rules_for
from diffing.vocab import NO_OP, Action, Rollout


class Target(Record):
    """One object to analyse: its two sides (``None``: absent) and what the caller knows."""

    _fields = ("engine", "key", "before", "after", "headroom", "live", "argo_apps", "duplicates", "replacing",
               "flux", "flux_after")

    engine: Engine
    key: tuple[str, str]
    before: Manifest | None
    after: Manifest | None
    headroom: Mapping[str, Fraction] | None
    live: LiveCluster | None
    argo_apps: Sequence[Any]
    duplicates: Sequence[Duplicate]
    replacing: Sequence[str]  # the objects the same change deletes (:func:`replaced_by`)
    flux: Mapping[str, Any] | None  # the Flux Kustomization / HelmRelease that deploys it, if any
    flux_after: Mapping[str, Any] | None  # of a deleted object: that deployer at the new commit, if kept

    def __init__(self, engine: Engine, key: tuple[str, str], before: Manifest | None,
                 after: Manifest | None, headroom: Mapping[str, Fraction] | None = None,
                 live: LiveCluster | None = None, argo_apps: Sequence[Any] = (),
                 duplicates: Sequence[Duplicate] = (), replacing: Sequence[str] = (),
                 flux: Mapping[str, Any] | None = None, flux_after: Mapping[str, Any] | None = None) -> None:
        set_field(self, "engine", engine)
        set_field(self, "key", key)
        set_field(self, "before", before)
        set_field(self, "after", after)
        set_field(self, "headroom", headroom)
        set_field(self, "live", live)
        set_field(self, "argo_apps", argo_apps)
        set_field(self, "duplicates", duplicates)
        set_field(self, "replacing", replacing)
        set_field(self, "flux", flux)
        set_field(self, "flux_after", flux_after)


class Analysis:
    """One object through the stages. A kind subclasses it and overrides the hooks below.

    The working state is plain attributes, filled stage by stage: ``changes`` (stage 1),
    ``schema_errors``/``unknown``/``problems`` (2), ``action``/``rollout`` (3), ``capacity``
    (4), ``findings`` (5), ``decision``/``headline`` (6) and ``steps`` (7); ``reasons`` grow
    throughout.
    """

    kind: ClassVar[str]
    # The kind's change categories (its rules.py StrEnum): the JSON report's words for them.
    categories: ClassVar[Iterable[str]] = ()
    # The change categories a hold of each rollout is about: annotations point at them.
    holding: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init__(self, t: Target) -> None:
        self.target = t
        self.engine, self.policy, self.rules = t.engine, t.engine.policy, t.engine.rules
        self.key, self.before, self.after = t.key, t.before, t.after
        main = t.after or t.before
        assert main is not None
        self.main: Manifest = main
        self.b_def = self.defaulted(t.before) if t.before else None
        self.a_def = self.defaulted(t.after) if t.after else None
        self.b_spec, self.a_spec = dig(self.b_def, "spec"), dig(self.a_def, "spec")
        self.headroom, self.live, self.replacing = t.headroom, t.live, t.replacing
        self.argo_apps = t.argo_apps
        gate = BY_NAME[self.kind].gate
        # Whether the operator runs this kind's controller at all (its feature gate, if any).
        self.gate_on = gate is None or bool(self.rules.gates(self.policy.feature_gates).get(gate, False))
        self.changes: list[Change] = []
        self.reasons: list[str] = []
        self.findings: list[Finding] = []
        self.schema_errors: list[tuple[Path, str]] = []
        self.unknown: list[Path] = []
        self.problems: list[tuple[str, Path, str]] = []
        self.action = Action.UNCHANGED
        self.rollout: str = Rollout.NONE
        self.capacity: Capacity | None = None
        self.decision: str = APPROVE
        self.headline = ""
        self.steps: tuple[WayOut, ...] = ()
        self.strategy = ""

    @classmethod
    def run(cls, t: Target) -> ResourceReport:
        a = cls(t)
        a.diff()
        if a.after and a.a_def is not None and (a.before is None or a.changes):
            a.validate()
        a.predict()
        a.capacity = a.size()
        a.findings.extend(a.check())
        a.findings.extend(duplicate_findings(t.duplicates))
        if t.flux is not None and a.after is not None and _is_kustomization(t.flux) and (
                why := flux_not_applied(a.after.obj, a.before is None)):
            a.findings.append(a.finding("warning", "flux-not-applied", "metadata.annotations", why))
        if t.flux is not None and a.before is not None and a.after is None and (
                why := flux_not_pruned(t.flux, t.flux_after, a.before.obj)):
            a.findings.append(a.finding("warning", "flux-not-pruned", "metadata", why))
        a.findings.sort(key=lambda f: SEVERITY_ORDER.get(f.severity, 3))
        if a.action != Action.UNCHANGED:  # nothing is applied, whatever the manifest says
            a.decide()
        if a.decision == IGNORE and t.flux is not None:  # Flux's advice, not Argo CD's (diffing/flux.py)
            a.reasons = [flux_reason(t.flux) if r.startswith("Git is fighting") else r for r in a.reasons]
        if a.decision == HOLD:
            a.steps = by_actor(a.ways_out())
        return a.report()

    @cached_property
    def known(self) -> Mapping[str, Fraction] | None:
        """The headroom known for this object: the live basis's, measured, wins over the
        caller's."""
        return known_headroom(self.headroom, self.live)

    # -- the stages a kind supplies ----------------------------------------------------------

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        """The object as the API server stores it (pruned, defaulted)."""
        raise NotImplementedError

    def diff(self) -> None:
        """Stage 1: fill ``changes``, each with its category."""
        raise NotImplementedError

    def schemas(self) -> tuple[SchemaSet, Schema | None]:
        """The CRD schema set and the schema of ``spec`` for the after side's apiVersion."""
        raise NotImplementedError

    def cel_errors(self) -> list[tuple[Path, str]]:
        """The CRD's CEL rules that the after side breaks (beyond the OpenAPI schema)."""
        return []

    def operator_problems(self) -> list[tuple[str, Path, str]]:
        """What the operator's own validation rejects in the (defaulted) after side."""
        raise NotImplementedError

    def validate(self) -> None:
        """Stage 2: the API server first (schema, CEL, transition rules); only an object it
        stores reaches the operator's validation."""
        assert self.after is not None and self.a_def is not None
        schemas, spec = self.schemas()
        self.schema_errors = version_errors(schemas, self.after.api_version) + validate(
            schemas, self.after.obj.get("spec"), spec, ("spec",), unknown=self.unknown)
        if self.b_def is not None:  # an update: the old object (as stored) read in the write's version
            self.schema_errors = ratchet(schemas, self.schema_errors, self.after.obj.get("spec"),
                                         self.b_def.get("spec"), spec)
        self.schema_errors += self.cel_errors()
        if self.before is not None:
            self.schema_errors += transition_errors(schemas, self.before.obj.get("spec"),
                                                    self.after.obj.get("spec"), spec, ("spec",))
        if not self.schema_errors:
            self.problems = self.operator_problems()

    def predict(self) -> None:
        """Stage 3: ``action`` and ``rollout``."""
        if self.before is None:
            self.action, self.rollout = Action.CREATED, Rollout.CREATE
            self.created()
        elif self.after is None:
            self.action, self.rollout = Action.DELETED, Rollout.DELETE
            self.deleted()
        else:
            self.action = Action.UPDATED if self.changes else Action.UNCHANGED
            self.rollout = self.updated()
        self.settle()

    def created(self) -> None:
        """The reason of a created object (``rollout`` is ``create``)."""
        raise NotImplementedError

    def deleted(self) -> None:
        """The reason of a deleted object (``rollout`` is ``delete``)."""
        raise NotImplementedError

    def updated(self) -> str:
        """The rollout of a change to an existing object."""
        raise NotImplementedError

    def settle(self) -> None:
        """After the rollout: what overrides it (an invalid new object, ``managedBy``)."""

    def refuse_new(self) -> bool:
        """A new object the API server or the operator's validation refuses is ``not-applied``."""
        if self.after is not None and self.before is None and (self.schema_errors or self.problems):
            self.rollout = Rollout.NOT_APPLIED
            return True
        return False

    def leave_to_manager(self, cite: str = "") -> bool:
        """A created or deleted object ``managedBy`` another controller: this operator builds and
        deletes nothing of it (``none``)."""
        if self.rollout not in (Rollout.CREATE, Rollout.DELETE):
            return False
        manager = external_manager(self.a_def if self.rollout == Rollout.CREATE else self.b_def)
        if manager is None:
            return False
        self.reasons[:] = [f"spec.managedBy is {manager}: this KubeRay operator never reconciles the "
                           f"{self.kind}{f' ({cite})' if cite else ''}; it builds and deletes nothing here"]
        self.rollout = Rollout.NONE
        return True

    def size(self) -> Capacity:
        """Stage 4: the capacity the rollout needs."""
        raise NotImplementedError

    def check(self) -> Iterable[Finding]:
        """Stage 5: the findings."""
        raise NotImplementedError

    def decide(self) -> None:
        """Stage 6 (for an object the change touches): ``decision`` and ``headline``."""
        raise NotImplementedError

    def ways_out(self) -> Sequence[WayOut]:
        """Stage 7 (a hold): the ways out, each with who can take it; within one actor the most
        specific first (:func:`~diffing.report.by_actor` orders the actors)."""
        raise NotImplementedError

    def ignore_entry(self) -> dict[str, Any]:
        """The Argo CD ``ignoreDifferences`` entry of an ``ignore-differences`` decision."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------

    def add_changes(self, differences: Iterable[Difference], category_of: Callable[[Path], str]) -> None:
        """Stage 1 as most kinds do it: each difference a change of its field's category (``no-op``
        when Go's encoding makes it vanish), with its line; against a live before side those
        no-ops are the API server's defaults and are left out."""
        before, after = self.before, self.after
        assert before is not None and after is not None
        for d in differences:
            self.changes.append(Change(d.path, NO_OP if d.noop else category_of(d.path), d.before, d.after,
                                       d.note, after.line(d.path) or before.line(d.path)))
        if self.engine.before_is_live:
            self.changes = [c for c in self.changes if c.category != NO_OP]

    def operator_holds(self, hold: list[str], headline: str, not_applied: str) -> str:
        """The holds every kind makes on what the operator does: error findings, and a change it
        will not apply (``not_applied`` is that hold's headline; ``notApplied: warn`` only says
        so). Appends to ``hold``; returns the headline so far."""
        errors = error_hold(self.findings, self.policy)
        if errors:
            hold.append(errors[0])
            headline = headline or errors[1]
        if self.rollout == Rollout.NOT_APPLIED:
            if self.policy.not_applied == "hold":
                hold.append(NOT_APPLIED_HOLD)
                headline = headline or not_applied
            else:
                self.reasons.append(NOT_APPLIED_WARN)
        return headline

    def created_beside_deleted(self, needs: Mapping[str, Any]) -> bool:
        """A created object that ``needs`` capacity while the change deletes others (a rename, a
        move): both run until the old one is pruned, so its needs are extra; the reason says so."""
        if self.rollout != Rollout.CREATE or not self.replacing or not needs:
            return False
        self.reasons.append(replacement_reason(self.kind, self.replacing))
        return True

    def finding(self, severity: str, code: str, path: Path | str, message: str) -> Finding:
        return located(self.after or self.before, severity, code, path, message)

    def schema_findings(self) -> Iterator[Finding]:
        """What the API server says about the after side: the same words for every kind."""
        for path, message in self.schema_errors:
            yield self.finding("error", "schema-violation", path,
                               f"the API server rejects this manifest: {message}")
        for path in self.unknown:
            yield self.finding("warning", "unknown-field", path,
                               "the CRD has no such field: kubectl's strict validation rejects it and "
                               "other clients see it silently pruned")

    def report(self) -> ResourceReport:
        assert self.capacity is not None
        flux = self.target.flux if self.decision == IGNORE else None
        return ResourceReport(
            api_version=self.main.api_version, namespace=self.key[0], name=self.key[1],
            action=self.action, rollout=self.rollout, decision=self.decision, reasons=tuple(self.reasons),
            changes=tuple(self.changes), capacity=self.capacity, findings=tuple(self.findings),
            ignore_differences=(self.ignore_entry(),) if self.decision == IGNORE and not flux else (),
            drift=flux_advice(flux, self.kind, self.key[0], self.key[1], self.main.obj) if flux else None,
            source=self.main.where(), origin=self.main.source, strategy=self.strategy,
            headline=self.headline, ways_out=self.steps, kind=self.kind)


def analyze(before_text: Texts, after_text: Texts, kuberay_version: str = DEFAULT,
            headroom: Mapping[str, Any] | None = None, policy: Mapping[str, Any] | None = None, *,
            live: Mapping[str, LiveCluster] | None = None, sources: tuple[str, str] = ("before", "after"),
            limits: Limits | None = None, crd: str | None = None, before_is_live: bool = False,
            notes: Sequence[Finding] = ()) -> Report:
    """Analyse a change from ``before_text`` to ``after_text`` (YAML; ``""`` = nothing there).

    ``before_is_live`` says the before side was read from the API server (Argo CD's live
    state): its server defaults are then expected, and differences that vanish under the
    operator's normalisation are not listed as no-op changes.

    Either text may also be a sequence of ``(source, text)`` pairs or :class:`Source` values,
    e.g. one per file of a commit or per rendered kustomize/Helm root: RayServices are paired
    across all of them by (namespace, name); the same name from two sources of one side is a
    ``duplicate-resource`` finding. ``crd`` is an optional RayService CRD (YAML text) whose
    schema replaces the version's built-in one.

    ``notes`` are findings about the change as a whole that the caller met before the
    analysis (a root that could not be rendered: code ``render-failed``). They are reported
    under ``findings`` at the top of the report; an error among them holds the change
    (``render-failed`` weighs as the policy's ``renderFailure`` says).

    >>> report = analyze("", open_sample_text)            # doctest: +SKIP
    >>> report.to_dict()["resources"][0]["rollout"]       # doctest: +SKIP
    'create'

    Raises :class:`~diffing.errors.ManifestError` for a text that cannot be read,
    :class:`~diffing.errors.PolicyError` for a bad policy or headroom and
    :class:`~diffing.errors.UnsupportedVersionError` for an unknown KubeRay version.
    """
    # The analysis builds many small containers and leaves no reference cycle behind (loading
    # refuses recursive anchors), so the cyclic collector only costs time here: its passes over
    # the growing heap made analysis time superlinear in the number of worker groups. Reference
    # counting still frees everything; the collector resumes afterwards.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _analyze(before_text, after_text, kuberay_version, headroom, policy, live=live,
                        sources=sources, limits=limits, crd=crd, before_is_live=before_is_live,
                        notes=notes)
    except RecursionError:
        raise ManifestError("the manifests nest too deeply to analyse") from None
    finally:
        if paused:
            gc.enable()


def _analyze(before_text: Texts, after_text: Texts, kuberay_version: str,
             headroom: Mapping[str, Any] | None, policy: Mapping[str, Any] | None, *,
             live: Mapping[str, LiveCluster] | None, sources: tuple[str, str],
             limits: Limits | None, crd: str | None, before_is_live: bool,
             notes: Sequence[Finding]) -> Report:
    rules = rules_for(kuberay_version)
    pol = Policy.from_mapping(policy)
    room = parse_headroom(headroom, known=pol.accelerators)
    lim = limits or Limits()
    engine = Engine(rules, pol, crd_schemas(crd) if crd else None, before_is_live=before_is_live)
    b_others: dict[ObjectKey, Any] = {}
    a_others: dict[ObjectKey, Any] = {}
    b_flux: dict[str, Any] = {}
    a_flux: dict[str, Any] = {}
    befores, _, b_dups = collect_all(before_text, sources[0], lim, b_others, b_flux)
    afters, apps, a_dups = collect_all(after_text, sources[1], lim, a_others, a_flux)
    not_analysed = changed_others(b_others, a_others)
    deleted = replaced_by(befores, afters)
    resources = []
    for ident in sorted(set(befores) | set(afters), key=lambda i: (ORDER[i[0]], i[1], i[2])):
        kind, key = ident[0], (ident[1], ident[2])
        dups = [d for d in (a_dups if ident in afters else b_dups) if d.key == ident]
        before, after = befores.get(ident), afters.get(ident)
        replacing = deleted if before is None else ()
        main = after or before
        assert main is not None
        deployer = (a_flux if after is not None else b_flux).get(main.source)
        target = Target(engine, key, before, after, headroom=room, live=(live or {}).get(live_key(ident)),
                        argo_apps=apps, duplicates=dups, replacing=replacing, flux=deployer,
                        flux_after=a_flux.get(main.source) if after is None else None)
        resources.append(BY_NAME[kind].analysis.run(target))
    general = tuple(sorted((weigh_note(n, pol) for n in notes),
                           key=lambda f: SEVERITY_ORDER.get(f.severity, 3)))
    blocked = any(f.severity == "error" and (f.code == "render-failed" or pol.hold_on_errors)
                  for f in general)
    decision = HOLD if blocked or any(r.decision == HOLD for r in resources) else \
        IGNORE if any(r.decision == IGNORE for r in resources) else APPROVE
    # The summary names the most important environment's object first (production, or the
    # policy's order); the resources keep their order (kind, namespace, name).
    first = sorted(resources, key=lambda r: environment_rank(r, pol.environments))
    return Report(kuberay_version=rules.version, decision=decision,
                  summary=summarize(decision, first, general, not_analysed),
                  resources=tuple(resources), findings=general, not_analysed=not_analysed,
                  environments=pol.environments)



NOTHING = f"no {NAMES_TEXT} in the change"


def _is_kustomization(deployer: Mapping[str, Any]) -> bool:
    return deployer.get("kind") == "Kustomization"


def replaced_by(befores: Mapping[Ident, Manifest], afters: Mapping[Ident, Manifest]) -> tuple[str, ...]:
    """The analysed objects the change deletes while it creates others (``RayService ns/old``).

    A rename (``metadata.name`` is immutable) or a move is a delete plus a create, and Argo CD
    does not wait for the deleted object's pods to go before the new one's are built; without
    prune the old one stays. So a created object runs next to these: its accelerators are extra
    capacity. An object another controller manages (``spec.managedBy``) runs nothing here and
    frees nothing when deleted. Empty when nothing is both created and deleted.
    """
    if not any(ident not in befores for ident in afters):
        return ()
    return tuple(f"{kind} {ns}/{name}" for (kind, ns, name), m in sorted(
        befores.items(), key=lambda item: (ORDER[item[0][0]], item[0][1], item[0][2]))
        if (kind, ns, name) not in afters and external_manager(m.obj) is None)


def weigh_note(note: Finding, policy: Policy) -> Finding:
    """A caller's note as the policy weighs it: ``renderFailure: warn`` makes a render failure a
    warning, ``unknownSources`` an unknown source it allows."""
    if note.severity != "error":
        return note
    if note.code == "render-failed" and policy.render_failure == "warn" or (
            note.code == "unknown-source" and policy.allows(note.message)):
        return Finding("warning", note.code, note.path, note.message, note.line)
    return note


def not_analysed_text(counts: Mapping[str, int]) -> str:
    """``1 RayCluster, 2 RayJobs not analysed`` ("" for none)."""
    if not counts:
        return ""
    parts = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()]
    return ", ".join(parts) + " not analysed"


def summarize(decision: str, resources: list[ResourceReport], general: Sequence[Finding] = (),
              not_analysed: Mapping[str, int] | None = None) -> str:
    errors = [f for f in general if f.severity == "error"]
    problem = ""
    if general:
        first = errors[0] if errors else general[0]
        more = len(general) - 1
        problem = f"{first.path}: {first.code}" + (f" (+{more} more)" if more else "")
    skipped = not_analysed_text(not_analysed or {})
    if not resources:
        if problem:
            return f"{decision}: {problem}; no {NAMES_TEXT} could be compared there"
        if skipped:  # silence about what was not looked at would read as a verdict on it
            return f"approve: {NOTHING}; {skipped}"
        return f"approve: {NOTHING}"
    held = [r for r in resources if r.decision == HOLD]
    focus = held[0] if held else next((r for r in resources if r.rollout != "none"), resources[0])
    gpus = {k: v for k, v in focus.capacity.extra.items() if k not in ("cpu", "memory")
            and isinstance(v, int)}
    parts = [f"{decision}: {focus.namespace}/{focus.name} → {focus.rollout}"]
    if gpus:
        parts.append("needs " + ", ".join(f"{v} extra {k}" for k, v in gpus.items()))
    elif "cpu" in focus.capacity.extra or "memory" in focus.capacity.extra:
        extra = focus.capacity.extra
        parts.append(f"needs {human('cpu', extra.get('cpu', '0'))} CPU and "
                     f"{human('memory', extra.get('memory', '0'))} memory extra, no accelerators")
    if decision == HOLD and focus.headline:
        parts.append(focus.headline)
    if focus.decision == IGNORE and focus.drift is not None:
        parts.append("Git fights the autoscaler: see the Flux advice")
    elif focus.decision == IGNORE:
        parts.append("Git fights the autoscaler: ignore these fields in Argo CD")
    elif len(parts) == 1:
        why = next((r for r in focus.reasons if not r.startswith("strategy:")), "")
        if why:
            parts.append(why.split(":")[0])  # e.g. "only serveConfigV2 changed"
    others = len(resources) - 1
    if others:
        kinds = {r.kind for r in resources if r is not focus}
        noun = next(iter(kinds)) if len(kinds) == 1 else "resource"
        parts.append(f"+{others} more {noun}{'s' if others > 1 else ''}")
    if problem:
        parts.append(problem)
    if skipped:
        parts.append(skipped)
    return "; ".join(parts)
