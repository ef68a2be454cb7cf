"""The scheduler's filter plugins, one function each, in the order the default profile runs them
(kubernetes pkg/scheduler/apis/config/v1/default_plugins.go): NodeUnschedulable, TaintToleration,
NodeAffinity, NodeResourcesFit, PodTopologySpread. A node fails on the first plugin that rejects
it, with that plugin's reasons; the messages are the plugins' own strings:

* nodeunschedulable/node_unschedulable.go ``ErrReasonUnschedulable``
* tainttoleration/taint_toleration.go ``Filter``: ``node(s) had untolerated taint {key: value}``
* nodeaffinity/node_affinity.go ``ErrReasonPod``
* noderesources/fit.go ``fitsRequest``: ``Too many pods``, ``Insufficient <resource>``
* podtopologyspread/filtering.go ``ErrReasonConstraintsNotMatch`` / ``ErrReasonNodeLabelNotMatch``
"""

from __future__ import annotations

from collections.abc import Mapping

from diffing.hints import Any
from diffing.placement.asks import Ask
from diffing.placement.nodes import UNSCHEDULABLE, Node

UNSCHEDULABLE_REASON = "node(s) were unschedulable"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
SPREAD_REASON = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_REASON = SPREAD_REASON + " (missing required label)"
TOO_MANY_PODS = "Too many pods"
_FIXED = ("cpu", "memory", "ephemeral-storage")  # fitsRequest checks these first, then the scalars


def tolerates(toleration: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    """``v1.Toleration.ToleratesTaint`` (k8s.io/api core/v1/toleration.go)."""
    t_effect = toleration.get("effect") or ""
    if t_effect and t_effect != effect:
        return False
    t_key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if t_key and t_key != key:
        return False
    if op == "Exists":
        return True
    return op == "Equal" and str(toleration.get("value") or "") == value


def matches_expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` / ``LabelSelectorRequirement`` against ``labels``."""
    key, op = str(expr.get("key")), expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term(term: Mapping[str, Any], node: Node) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node (nodeaffinity.NewNodeSelector)
    names = {"metadata.name": node.name}
    return (all(isinstance(e, Mapping) and matches_expression(e, node.labels) for e in exprs)
            and all(isinstance(f, Mapping) and matches_expression(f, names) for f in fields))


def static_reason(ask: Ask, node: Node) -> str | None:
    """Why the node is out for this pod whatever is placed: the first plugin (of NodeUnschedulable,
    TaintToleration, NodeAffinity) that rejects it, ``None`` when none does."""
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE, "", "NoSchedule") for t in ask.tolerations):
        return UNSCHEDULABLE_REASON
    for key, value, effect in node.taints:
        if not any(tolerates(t, key, value, effect) for t in ask.tolerations):
            return f"node(s) had untolerated taint {{{key}: {value}}}"
    labels = node.labels
    if any(labels.get(k) != v for k, v in ask.selector.items()):
        return AFFINITY_REASON
    if ask.terms and not any(_term(t, node) for t in ask.terms):
        return AFFINITY_REASON
    return None


def fits(requests: Mapping[str, int], node: Node) -> bool:
    if node.pods_free < 1:
        return False
    free = node.free
    for k, v in requests.items():
        if free.get(k, 0) < v:
            return False
    return True


def resource_reasons(requests: Mapping[str, int], node: Node) -> list[str]:
    """``fitsRequest``'s reasons, in its order: the pod count, cpu, memory, ephemeral storage, then
    the scalar resources (their map order in Go; sorted here)."""
    out = [TOO_MANY_PODS] if node.pods_free < 1 else []
    free = node.free
    for k in (*[k for k in _FIXED if k in requests], *sorted(k for k in requests if k not in _FIXED)):
        if free.get(k, 0) < requests[k]:
            out.append(f"Insufficient {k}")
    return out


def selects(selector: Any, labels: Mapping[str, str]) -> bool:
    """A ``LabelSelector``: matchLabels and matchExpressions; a missing selector matches nothing
    (``metav1.LabelSelectorAsSelector`` of nil)."""
    if not isinstance(selector, Mapping):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    exprs = selector.get("matchExpressions") or []
    return all(isinstance(e, Mapping) and matches_expression(e, labels) for e in exprs)
