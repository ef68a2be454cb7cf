"""What to do about a hold: the concrete ways out, specific to its cause, and who can take them.

A hold that only says "no" gets switched off. Each hold ends with the ways a team really gets
past it, in the order of who can act on a pull request: the reviewer (accept it on purpose, an
audited override, or ask for an edit), the author (make the change take effect, roll out with
less, move a Serve setting where it applies in place), the platform (give or declare headroom,
a policy setting that releases exactly this kind of hold). Pure: values in, sentences out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from diffing.hints import Any
from diffing.holds import (
    ALWAYS_SETTING,
    IN_PLACE_SETTING,
    NOT_APPLIED_SETTING,
    RECREATE_SETTING,
    approve,
    author,
    fix_errors,
    platform,
    policy_setting,
    replacement_steps,
    unknown_device_steps,
)
from diffing.rayservice.rules import Category
from diffing.report import Change, Finding, WayOut
from diffing.vocab import Rollout, Severity

_NOT_APPLIED = {
    "schema": author("fix the manifest where the API server rejects it (the error finding names the field); "
                     "until then nothing of this change is stored"),
    "validation": author("fix what KubeRay's validation rejects (the error finding names the rule); until "
                         "then the RayService is marked ValidationFailed and keeps running the old spec"),
    "suspended": author("set `spec.suspend: false` to apply it; resuming builds a new RayCluster at full "
                        "size", (("spec", "suspend"), False)),
    "strategy-none": author("set `spec.upgradeStrategy.type: NewCluster` (room for a second cluster while it "
                            "rolls) or `NewClusterWithIncrementalUpgrade`; under `None` cluster changes "
                            "never apply", (("spec", "upgradeStrategy", "type"), "NewCluster")),
    "bounds": platform("the new bounds take effect with the next change that builds a new RayCluster or "
                       "when a worker group is appended; to use them now, set them on the running "
                       "RayCluster too (`kubectl edit raycluster`), which KubeRay v1.7 leaves as it is"),
    "replicas": author("replicas in Git only size a new cluster: turn on autoscaling "
                       "(`enableInTreeAutoscaling: true`) and let Ray size it, or have the running "
                       "RayCluster's replicas changed (`kubectl edit raycluster`)"),
    "ignored": author("tolerations and schedulingGates reach only a new RayCluster: ship them with a change "
                      "that builds one, or set them on the running RayCluster's pods' template as well"),
}

# Container fields that Ray Serve can carry per deployment (runtime_env), applied in place.
_SERVE_CARRIABLE = ("env", "envFrom")


def _serve_could_carry(changes: Sequence[Change]) -> bool:
    """Only container env vars changed among the cluster-recreating changes."""
    recreating = [c for c in changes if c.category == Category.CLUSTER_RECREATE.value]
    return bool(recreating) and all(any(seg in _SERVE_CARRIABLE for seg in c.path if isinstance(seg, str))
                                    for c in recreating)


def next_steps(*, rollout: str, cause: str, strategy: str, changes: Sequence[Change],
               findings: Sequence[Finding], extra: Mapping[str, Any], is_accelerator: Callable[[str], bool],
               replacing: bool = False, declared: Sequence[str] = (), hold_on_recreate: str = "gpu-only",
               capacity_held: bool = True) -> tuple[WayOut, ...]:
    """The ways out of a hold (call only for a held resource), each with who can take it; only
    those that can release this hold.

    ``replacing``: the resource is created while the change deletes another (a rename);
    ``declared``: the policy's own ``accelerators`` (no hint to exclude those);
    ``hold_on_recreate``: the policy's ``holdOnRecreate``; ``capacity_held``: the capacity (or
    ``holdOnRecreate: always``) holds it, not only what else the decision found.
    """
    steps: list[WayOut] = []
    errors = any(f.severity == Severity.ERROR for f in findings)
    if errors:
        steps.append(fix_errors())
    if rollout == Rollout.NOT_APPLIED and cause in _NOT_APPLIED:
        steps.append(_NOT_APPLIED[cause])
    if rollout == Rollout.NOT_APPLIED and not errors:  # a rejected manifest holds by its errors
        steps.append(policy_setting(*NOT_APPLIED_SETTING))
    confirm = ""
    if rollout == Rollout.SUSPEND:
        confirm = "the outage is intended (suspending deletes every RayCluster of this RayService)"
        steps.append(author("keep it serving: leave `spec.suspend` false", (("spec", "suspend"), False)))
    gpus = {k: v for k, v in extra.items() if is_accelerator(k) and isinstance(v, int) and v > 0}
    if rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL) and capacity_held:
        steps.extend(_second_cluster(rollout, strategy, changes, gpus, hold_on_recreate, declared))
    if rollout == Rollout.CLUSTER_IN_PLACE and capacity_held:
        steps.extend(_in_place(gpus))
    if rollout == Rollout.CREATE and replacing and extra and capacity_held:
        steps.extend([policy_setting(*ALWAYS_SETTING)] if hold_on_recreate == "always" else
                     replacement_steps(gpus, declared) if gpus else [policy_setting(*RECREATE_SETTING)])
    return (approve(steps, confirm), *steps)


def _in_place(gpus: Mapping[str, int]) -> list[WayOut]:
    """An in-place update held because the pods it adds do not fit on the live nodes."""
    what = ", ".join(f"{v} {k}" for k, v in gpus.items()) or "the pods it adds"
    return [author("add fewer pods: lower the appended group's `replicas` (or the new replica count) to what "
                   "the live nodes take (the placement above says how many found a node)"),
            platform(f"make room for {what} on nodes the pods may use (the placement names how many more "
                     "nodes of which shape would take them)"),
            policy_setting(*IN_PLACE_SETTING)]


def _second_cluster(rollout: str, strategy: str, changes: Sequence[Change], gpus: Mapping[str, int],
                    hold_on_recreate: str, declared: Sequence[str]) -> list[WayOut]:
    """A new-cluster or incremental rollout held: for lack of room, or by ``holdOnRecreate: always``
    (which only the policy releases)."""
    if hold_on_recreate == "always":
        return [policy_setting(*ALWAYS_SETTING)]
    steps = []
    if not gpus:  # a resource with a policy threshold (cpu, memory) beyond the headroom
        return [policy_setting(*RECREATE_SETTING)]
    if rollout == Rollout.NEW_CLUSTER and "NewClusterWithIncrementalUpgrade" not in strategy:
        steps.append(author("roll out with less: `upgradeStrategy.type: NewClusterWithIncrementalUpgrade` "
                            "moves capacity step by step (only `maxSurgePercent` of the cluster extra at a "
                            "time); it needs the RayServiceIncrementalUpgrade feature gate, in-tree "
                            "autoscaling and a Gateway API controller"))
    if _serve_could_carry(changes):
        steps.append(author("if these are settings of your Serve apps, move them to `serveConfigV2` "
                            "(`runtime_env.env_vars`): Serve applies them in place, no new cluster"))
    need = ", ".join(f"{v} {k}" for k, v in gpus.items())
    flags = " ".join(f"{k}={v}" for k, v in gpus.items())
    steps.append(platform(f"make room for {need} while both clusters run, and say so: `--headroom {flags}` "
                          "(the Action's `headroom:` input), the service's live basis (it reads the free "
                          "GPUs), or the policy's `thresholds`"))
    steps.extend(unknown_device_steps(gpus, declared))
    steps.append(policy_setting(*RECREATE_SETTING))
    return steps
