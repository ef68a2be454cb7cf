"""The ways out of a held standalone RayCluster change: what each hold asks of the reviewer.

The decision (:meth:`RayClusterAnalysis.decide`) records each hold with its :class:`Cause`;
the steps follow the holds in their order, each said once.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from diffing.holds import replacement_steps, unknown_device_steps
from diffing.kube.paths import schema_path
from diffing.managed import external_manager
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
    REPLACEMENT = "replacement"                # a rename whose accelerators the headroom does not cover
    REPLACEMENT_POLICY = "replacement-policy"  # a rename held by holdOnRecreate: always


class Hold(NamedTuple):
    cause: Cause
    reason: str
    headline: str


_HEAD_SERVICE = {("spec", "headServiceAnnotations"), ("spec", "headGroupSpec", "headService"),
                 ("spec", "headGroupSpec", "serviceType")}

STEPS: dict[Cause, tuple[str, ...]] = {
    Cause.SUSPEND: ("confirm the outage, or drop spec.suspend: true",),
    Cause.RECREATE: ("merge in a maintenance window, or set policy raycluster.holdOnRecreate: false",),
    Cause.ORPHANED: ("delete the old group's pods by hand after the sync, or use upgradeStrategy Recreate "
                     "(it deletes every pod of the cluster, orphans included)",),
    Cause.VERSION_SKEW: ("restart the cluster with the change (upgradeStrategy Recreate, or delete the pods "
                         "deliberately), or set policy raycluster.holdOnLatent: never",),
    Cause.HEADROOM: ("free or add the capacity first, or pass the real headroom (--headroom)",),
}


def next_steps(a: RayClusterAnalysis) -> tuple[str, ...]:
    """Stage 7: the steps of every hold, in the holds' order, then a hint for extended resources
    no accelerator family names."""
    assert a.capacity is not None
    gpus = a.policy.devices(a.capacity.extra)
    steps: list[str] = []
    for cause in dict.fromkeys(h.cause for h in a.holds):
        if cause == Cause.ERRORS:
            errors = [f for f in a.findings if f.severity == Severity.ERROR]
            steps.append(f"fix {errors[0].path} so the API server and KubeRay accept the spec")
        elif cause == Cause.NOT_APPLIED:
            steps.extend(_not_applied(a, bool(steps)))
        elif cause == Cause.REPLACEMENT:
            steps.extend(replacement_steps(gpus))
        else:
            steps.extend(STEPS.get(cause, ()))
    steps.extend(unknown_device_steps(gpus, a.policy.accelerators))
    return tuple(dict.fromkeys(steps))


def _not_applied(a: RayClusterAnalysis, others: bool) -> list[str]:
    """How to make the operator do what the change asks (``others``: earlier holds have steps)."""
    out = []
    if any(f.code == "suspend-field-removed" for f in a.findings):
        out.append("write spec.suspend: false instead of deleting the line")
    if {schema_path(c.path)[:3] for c in a.unapplied} & _HEAD_SERVICE:
        out.append("delete the head Service after the sync so KubeRay creates it again with the new "
                   "settings (clients reconnect), or drop the change")
    if external_manager({"spec": a.a_spec}) is not None:
        out.append("leave spec.managedBy unset unless another controller (MultiKueue) is meant to take the "
                   "cluster over")
    if not others and not out:
        out.append("drop the change, or carry it out another way (see the reasons)")
    return out
