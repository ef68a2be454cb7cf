"""The ways out of a held standalone RayCluster change: what each hold asks, and of whom.

The decision (:meth:`RayClusterAnalysis.decide`) records each hold with its :class:`Cause`;
the steps follow the holds in their order, each said once, after the reviewer's (accept it,
confirming what the holds are about, or ask the author for an edit); a policy setting is
offered only for the hold it releases.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from diffing.holds import (
    ALWAYS_SETTING,
    NOT_APPLIED_SETTING,
    approve,
    author,
    platform,
    policy_setting,
    replacement_steps,
    unknown_device_steps,
)
from diffing.kube.paths import schema_path
from diffing.managed import external_manager
from diffing.report import WayOut
from diffing.vocab import Severity

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis


class Cause(StrEnum):
    """What a hold is about: the key of its ways out."""

    ERRORS = "errors"
    NOT_APPLIED = "not-applied"
    SUSPEND = "suspend"
    RECREATE = "recreate"
    ORPHANED = "orphaned-pods"
    VERSION_SKEW = "version-skew"
    LATENT = "latent"
    HEADROOM = "headroom"
    PLACEMENT = "placement"                    # with the live nodes: pods that find no node
    REPLACEMENT = "replacement"                # a rename whose accelerators the headroom does not cover
    REPLACEMENT_POLICY = "replacement-policy"  # a rename held by holdOnRecreate: always


class Hold(NamedTuple):
    cause: Cause
    reason: str
    headline: str


_HEAD_SERVICE = {("spec", "headServiceAnnotations"), ("spec", "headGroupSpec", "headService"),
                 ("spec", "headGroupSpec", "serviceType")}

STEPS: dict[Cause, tuple[WayOut, ...]] = {
    Cause.SUSPEND: (author("keep it running: leave `spec.suspend` false", (("spec", "suspend"), False)),),
    Cause.RECREATE: (policy_setting("raycluster.holdOnRecreate: false", "Recreate restarts of standalone "
                                    "RayClusters"),),
    Cause.ORPHANED: (author("use `upgradeStrategy.type: Recreate`: it deletes every pod of the cluster, "
                            "orphans included"),
                     platform("delete the old group's pods by hand after the sync")),
    Cause.VERSION_SKEW: (author("restart the cluster with the change: `upgradeStrategy.type: Recreate`"),
                         platform("delete the pods deliberately after the sync, so every pod is built "
                                  "with the new version"),
                         policy_setting("raycluster.holdOnLatent: never", "a Ray version skew between "
                                        "old and new pods")),
    Cause.LATENT: (policy_setting("raycluster.holdOnLatent: version-skew", "changes that reach only pods "
                                  "built later (`always` holds every one)"),),
    Cause.HEADROOM: (platform("free or add the capacity first, and say so: `--headroom` (the Action's "
                              "`headroom:` input) or the policy's `thresholds`"),),
    Cause.PLACEMENT: (author("add fewer pods: lower the new replica counts to what the live nodes take (the "
                             "placement says how many found a node)"),
                      platform("make room on nodes the new pods may use (the placement names how many more "
                               "nodes of which shape would take them)")),
    Cause.REPLACEMENT_POLICY: (policy_setting(*ALWAYS_SETTING),),
}

# What accepting a hold confirms, for the causes that are a choice rather than a mistake.
CONFIRM = {Cause.SUSPEND: "the outage is intended (suspending deletes every pod)",
           Cause.RECREATE: "the downtime is planned (Recreate deletes every pod at once: a maintenance "
                           "window)"}


def next_steps(a: RayClusterAnalysis) -> tuple[WayOut, ...]:
    """Stage 7: the reviewer's way out, then the steps of every hold, in the holds' order (a
    hint for extended resources no accelerator family names with the capacity's)."""
    assert a.capacity is not None
    gpus = a.policy.devices(a.capacity.extra)
    causes = list(dict.fromkeys(h.cause for h in a.holds))
    steps: list[WayOut] = []
    for cause in causes:
        if cause == Cause.ERRORS:
            errors = [f for f in a.findings if f.severity == Severity.ERROR]
            steps.append(author(f"fix {errors[0].path} so the API server and KubeRay accept the spec"))
        elif cause == Cause.NOT_APPLIED:
            steps.extend(_not_applied(a, bool(steps), Cause.ERRORS in causes))
        elif cause == Cause.REPLACEMENT:
            steps.extend(replacement_steps(gpus, a.policy.accelerators))
        else:
            steps.extend(STEPS.get(cause, ()))
        if cause == Cause.HEADROOM:
            steps.extend(unknown_device_steps(gpus, a.policy.accelerators))
    steps = list(dict.fromkeys(steps))
    confirm = " and ".join(CONFIRM[c] for c in causes if c in CONFIRM)
    return (approve(steps, confirm), *steps)


def _not_applied(a: RayClusterAnalysis, others: bool, errors: bool) -> list[WayOut]:
    """How to make the operator do what the change asks (``others``: earlier holds have steps;
    ``errors``: error findings hold it too, so ``notApplied: warn`` alone would not release it)."""
    out = []
    if any(f.code == "suspend-field-removed" for f in a.findings):
        out.append(author("write `spec.suspend: false` instead of deleting the line"))
    if {schema_path(c.path)[:3] for c in a.unapplied} & _HEAD_SERVICE:
        out.append(platform("delete the head Service after the sync so KubeRay creates it again with the new "
                            "settings (clients reconnect), or drop the change"))
    if external_manager({"spec": a.a_spec}) is not None:
        out.append(author("leave spec.managedBy unset unless another controller (MultiKueue) is meant to "
                          "take the cluster over"))
    if not others and not out:
        out.append(author("drop the change, or carry it out another way (see the reasons)"))
    if not errors:
        out.append(policy_setting(*NOT_APPLIED_SETTING))
    return out
