"""What every kind shares when it decides: located findings, duplicates, headroom shortfalls,
the texts of a created-while-deleted (rename) hold and the ways out every hold offers.

A kind's own holds are in its ``analyze`` module; each builds on these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from diffing.hints import Any
from diffing.kube import resources as cap
from diffing.kube.manifests import Duplicate, Manifest
from diffing.kube.paths import Path, format_path
from diffing.kube.resources import is_extended, is_known_accelerator
from diffing.live import LiveCluster
from diffing.policy import Policy, parse_headroom
from diffing.report import Finding, WayOut
from diffing.vocab import Actor, Severity


def located(m: Manifest | None, severity: str, code: str, path: Path | str, message: str) -> Finding:
    """A finding at ``path`` of ``m``, with the line it names in ``m``'s file (a path given as
    text, e.g. ``Application llm-prod``, names no line)."""
    if isinstance(path, str):
        return Finding(severity, code, path, message)
    return Finding(severity, code, format_path(path), message, m.line(path) if m is not None else None)




def duplicate_findings(duplicates: Sequence[Duplicate]) -> list[Finding]:
    """One ``duplicate-resource`` error per other source that produces the same object."""
    return [Finding(
        "error", "duplicate-resource", "metadata.name",
        f"{dup.dropped} also produces {dup.key[0]} {dup.key[1]}/{dup.key[2]} (analysed here from "
        f"{dup.kept}): two Argo CD Applications (or roots) would apply it in turn and undo each "
        "other (Argo CD reports SharedResourceWarning); keep it in one") for dup in duplicates]


def known_headroom(headroom: Mapping[str, Fraction] | None, live: LiveCluster | None
                   ) -> Mapping[str, Fraction] | None:
    """The live basis's headroom for this RayService wins over the caller's global one."""
    if live is not None and live.headroom is not None:
        return parse_headroom(live.headroom, measured=True)
    return headroom


def replacement_reason(kind: str, replacing: Sequence[str]) -> str:
    """Why a created object's needs are extra when the change also deletes one (a rename, a
    move): Argo CD applies the new object in the same sync and does not wait for the old one's
    pods to go (its RayCluster and pods are deleted in the background after the prune); without
    prune the old one stays. Both run at once, as the two clusters of a new-cluster rollout."""
    return (f"created while {_listed(replacing)} {'is' if len(replacing) == 1 else 'are'} deleted: both "
            f"run until the old one is pruned (Argo CD creates the new {kind} in the same sync and does not "
            "wait for the old one's pods to go; without prune the old one stays), so what the new one "
            "needs is extra capacity")


def replacement_headline(replacing: Sequence[str], unknown: bool) -> str:
    verb = "is" if len(replacing) == 1 else "are"
    return (f"created while {_listed(replacing)} {verb} deleted: "
            + ("no headroom is known" if unknown else "the known headroom does not cover both"))


def _listed(names: Sequence[str], most: int = 2) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def shortfalls(policy: Policy, extra: Mapping[str, Any], known: Mapping[str, Fraction] | None
               ) -> list[tuple[str, Fraction, Fraction]]:
    """``(name, amount, free)`` for each accelerator, or resource with a policy threshold, of
    ``extra`` (amounts or quantity strings) beyond the known headroom plus its threshold; an
    unknown headroom has nothing free."""
    out = []
    for name, raw in extra.items():
        if not policy.counts(name) and name not in policy.thresholds:
            continue
        amount = raw if isinstance(raw, Fraction) else cap.Quantity.parse(raw).value
        free = (known or {}).get(name, Fraction(0))
        if amount > free + policy.thresholds.get(name, Fraction(0)):
            out.append((name, amount, free))
    return out


APPROVE = ("with `/rayservice-impact approve <reason>` (a maintainer's comment on the pull request; the "
           "service records who and why, for this result only)")


def approve(steps: Sequence[WayOut], confirm: str = "") -> WayOut:
    """The reviewer's way out of every hold: accept it on purpose, with a reason, or ask the
    author for one of their edits (when ``steps`` has any). ``confirm``: what accepting it
    confirms (an outage, lost work)."""
    what = f"confirm {confirm} and accept it" if confirm else "accept it on purpose"
    ask = ", or ask the author for an edit below" if any(w.by == Actor.AUTHOR for w in steps) else ""
    return WayOut(Actor.REVIEWER, f"{what} {APPROVE}{ask}")


def author(text: str, fix: tuple[Path, Any] | None = None) -> WayOut:
    return WayOut(Actor.AUTHOR, text, fix)


def platform(text: str) -> WayOut:
    return WayOut(Actor.PLATFORM, text)


def policy_setting(setting: str, what: str) -> WayOut:
    """A policy setting that releases this hold (and every other of its kind)."""
    return platform(f"stop holding {what} in every pull request: the policy's `{setting}`")


# The policy settings that release a hold, by what the hold is about; a hold gets only its own.
NOT_APPLIED_SETTING = ("notApplied: warn", "changes the operator will not apply")
RECREATE_SETTING = ("holdOnRecreate: never", "cluster recreations for lack of room")
IN_PLACE_SETTING = ("holdOnRecreate: never", "rollouts for lack of room (cluster recreations and pods added "
                    "in place alike)")
ALWAYS_SETTING = ("holdOnRecreate: gpu-only", "cluster recreations the headroom covers (`always` holds "
                  "every one)")


def fix_errors() -> WayOut:
    return author("fix the error findings below: they hold whatever else the change does")


def replacement_steps(gpus: Mapping[str, Any], declared: Sequence[str] = ()) -> list[WayOut]:
    """The ways out of a hold on an object created while the change deletes another
    (``declared``: the policy's own ``accelerators``)."""
    need = ", ".join(f"{v} {k}" for k, v in gpus.items())
    flags = " ".join(f"{k}={v}" for k, v in gpus.items())
    return [author("split the change: delete the old object in one change and sync it (with prune), then "
                   "add the new one, so the two never run together (metadata.name cannot change in place)"),
            platform(f"make room for {need} while the old and the new object both run, and say so: "
                     f"`--headroom {flags}` (the Action's `headroom:` input) or the policy's `thresholds`"),
            *unknown_device_steps(gpus, declared), policy_setting(*RECREATE_SETTING)]


def unknown_device_steps(gpus: Mapping[str, Any], declared: Sequence[str]) -> list[WayOut]:
    """A hint for extended resources no accelerator family names: they count until the policy
    says they are not scarce."""
    unknown = [k for k in gpus if is_extended(k) and not is_known_accelerator(k) and k not in declared]
    if not unknown:
        return []
    names = ", ".join(unknown)
    what = "is an extended resource" if len(unknown) == 1 else "are extended resources"
    return [platform(f"{names} {what} (a device plugin's) and counted like a GPU; if it is not a scarce "
                     f"device, say so in the policy: `notAccelerators: [{names}]`")]


def error_hold(findings: Sequence[Finding], policy: Policy) -> tuple[str, str] | None:
    """(reason, headline) of the hold every kind makes on error findings, unless the policy
    says ``holdOnErrors: false``."""
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if not errors or not policy.hold_on_errors:
        return None
    return f"{len(errors)} error finding(s): {errors[0].message}", f"{errors[0].code} at {errors[0].path}"


# A change the operator will not apply: the hold, or the reason when the policy only warns.
NOT_APPLIED_HOLD = "the operator will not apply what this change asks (see the reasons)"
NOT_APPLIED_WARN = "policy notApplied=warn: not holding a change the operator will not apply"
