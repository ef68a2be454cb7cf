"""The words of a report, as types: decisions, severities, actions and rollouts.

Each is a :class:`~enum.StrEnum`, so a member is the very string the JSON report, the HTTP
schemas (``app/schemas.py``) and the docs use; code compares members, never literals. The
change categories belong to each kind (``diffing/<kind>/rules.py``), since each controller
sorts fields differently.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Decision(StrEnum):
    APPROVE = "approve"
    HOLD = "hold"
    IGNORE = "ignore-differences"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITY_ORDER: dict[str, int] = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Action(StrEnum):
    """What the change does to the object itself."""

    CREATED = "created"
    DELETED = "deleted"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


# The change category every kind has: a difference the operator cannot see (Go's encoding, a
# default, a pruned field). Each kind's own categories are in its rules.py.
NO_OP = "no-op"


class Rollout(StrEnum):
    """What the operator does about the change. Which kind can predict which rollout is in
    each kind's ``ROLLOUTS`` (``diffing/<kind>/analyze.py``)."""

    NONE = "none"
    CREATE = "create"
    DELETE = "delete"
    NOT_APPLIED = "not-applied"
    SUSPEND = "suspend"
    RESUME = "resume"
    # RayService
    SERVE_IN_PLACE = "serve-in-place"
    CLUSTER_IN_PLACE = "cluster-in-place"
    NEW_CLUSTER = "new-cluster"
    INCREMENTAL = "incremental"
    # standalone RayCluster
    RECREATE = "recreate"
    SCALE = "scale"
    LATENT = "latent"
    # RayJob (and the RayJobs a RayCronJob creates)
    NEXT_RUN = "next-run"


class Actor(StrEnum):
    """Who can take a way out of a hold, in the order a pull request's comment lists them: the
    reviewer (accept it with the audited command, or ask for an edit), the author (an edit of
    the change itself), the platform (whoever runs the cluster and this check: capacity, the
    known headroom, the policy)."""

    REVIEWER = "reviewer"
    AUTHOR = "author"
    PLATFORM = "platform"


ACTOR_ORDER: dict[str, int] = {Actor.REVIEWER: 0, Actor.AUTHOR: 1, Actor.PLATFORM: 2}


class ExitCode(IntEnum):
    """The CLI's (and the Argo CD hook's) exit codes, one per kind of answer."""

    OK = 0         # approve or ignore-differences
    INTERNAL = 1   # an unexpected internal error
    USAGE = 2      # invalid input or usage: the message names the file, document and line
    HOLD = 3       # hold

    @classmethod
    def of(cls, decision: str) -> ExitCode:
        return cls.HOLD if decision == Decision.HOLD else cls.OK
