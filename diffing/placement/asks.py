"""The pods a rollout asks the scheduler for, and what each one requests.

A :class:`Ask` is one kind of pod (the head, or the pods of one worker group), ``count`` times,
in gangs of ``hosts`` pods (a multi-host replica, ``numOfHosts``). Requests are the scheduler's
(``PodRequests``, kubernetes staging/src/k8s.io/component-helpers/resource/helpers.go): the sum of
the app containers and the sidecar init containers (``restartPolicy: Always``), against the
largest init container plus the sidecars started before it, plus ``spec.overhead``. Every
amount is held as an integer count of thousandths (the scheduler compares cpu in millicores and
every other resource in whole units; a thousandth is finer than both), rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from diffing.hints import Any
from diffing.kube import resources as cap
from diffing.kube.quantity import Quantity, QuantityError
from diffing.kube.values import dig, mapping, seq

Milli = dict[str, int]

# Labels KubeRay v1.7.0 puts on every pod it builds (ray-operator/controllers/ray/common/pod.go,
# labelPod; utils/constant.go): the cluster name is generated for a new cluster, so it is left out.
GROUP_LABEL, NODE_TYPE_LABEL, RAY_NODE_LABEL = "ray.io/group", "ray.io/node-type", "ray.io/is-ray-node"


def milli(value: Fraction) -> int:
    return math.ceil(value * 1000)


def _amounts(raw: Any) -> dict[str, Fraction]:
    out = {}
    for name, q in mapping(raw).items():
        try:
            out[str(name)] = Quantity.parse(q).value
        except QuantityError:
            continue
    return out


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, Fraction(0)) + v


def _max(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for k, v in more.items():
        if v > into.get(k, Fraction(0)):
            into[k] = v


def pod_requests(spec: Any, *, extra_containers: tuple[Mapping[str, Fraction], ...] = (),
                 extra_inits: tuple[Mapping[str, Fraction], ...] = ()) -> Milli:
    """What the scheduler reserves for a pod with this spec, in thousandths per resource.

    A container's limit stands for a missing request (``SetDefaults_Pod``, the API server's
    defaulting). ``extra_containers`` / ``extra_inits`` are what the operator adds (the
    autoscaler container, the ``wait-gcs-ready`` init container), appended after the template's.
    """
    spec = mapping(spec)
    reqs: dict[str, Fraction] = {}
    for c in seq(spec.get("containers")):
        _add(reqs, cap.container_resources(c))
    for extra in extra_containers:
        _add(reqs, extra)
    sidecars: dict[str, Fraction] = {}
    inits: dict[str, Fraction] = {}
    steps = [(cap.container_resources(c), mapping(c).get("restartPolicy") == "Always")
             for c in seq(spec.get("initContainers"))]
    steps.extend((dict(e), False) for e in extra_inits)
    for own, sidecar in steps:
        if sidecar:
            _add(reqs, own)
            _add(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
        _max(inits, step)
    _max(reqs, inits)
    _add(reqs, _amounts(spec.get("overhead")))
    return {k: milli(v) for k, v in reqs.items() if v > 0}


class Ask:
    """``count`` pods of one kind, placed in gangs of ``hosts``; mutable only while it is built."""

    __slots__ = ("group", "namespace", "count", "hosts", "requests", "selector", "terms", "tolerations",
                 "spreads", "labels", "pending")

    def __init__(self, group: str, requests: Milli, *, count: int = 1, hosts: int = 1, namespace: str = "",
                 spec: Any = None, labels: Mapping[str, str] | None = None, pending: bool = False) -> None:
        spec = mapping(spec)
        self.group, self.namespace, self.count, self.hosts = group, namespace, count, max(hosts, 1)
        self.requests = requests
        self.selector = {str(k): str(v) for k, v in mapping(spec.get("nodeSelector")).items()}
        self.terms = [t for t in seq(dig(spec, "affinity", "nodeAffinity",
                                         "requiredDuringSchedulingIgnoredDuringExecution").get("nodeSelectorTerms"))
                      if isinstance(t, Mapping)]
        self.tolerations = [t for t in seq(spec.get("tolerations")) if isinstance(t, Mapping)]
        self.spreads = [c for c in seq(spec.get("topologySpreadConstraints"))
                        if isinstance(c, Mapping) and c.get("whenUnsatisfiable") == "DoNotSchedule"
                        and isinstance(c.get("topologyKey"), str)]
        self.labels = dict(labels or {})
        self.pending = pending

    @property
    def pods(self) -> int:
        return self.count * self.hosts

    def size(self) -> tuple[int, ...]:
        """First-fit-decreasing order: extended resources (the accelerators), then cpu, then memory."""
        r = self.requests
        return (sum(v for k, v in r.items() if "/" in k), r.get("cpu", 0), r.get("memory", 0))


def _group_template(group: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    template = mapping(group.get("template"))
    return mapping(template.get("spec")), mapping(dig(template, "metadata").get("labels"))


def rollout_asks(rcc: Any, replicas: Mapping[str, int] | None = None, *, head: bool = True,
                 namespace: str = "", init_injection: bool = True) -> list[Ask]:
    """The pods a RayCluster built from ``rcc`` (a ``rayClusterConfig`` / ``rayClusterSpec`` /
    RayCluster ``spec``) adds: the head when ``head``, and per worker group ``replicas[name]``
    replicas (default: the clamped replicas, ``GetWorkerGroupDesiredReplicas``) of ``numOfHosts``
    pods each; none for a suspended group.

    The head carries the autoscaler container when ``enableInTreeAutoscaling`` (pod.go:253-276,
    its default resources pod.go:989-996, ``autoscalerOptions.resources`` instead, pod.go:1006);
    workers carry the ``wait-gcs-ready`` init container (pod.go:644-657) unless injection is off.
    """
    rcc = mapping(rcc)
    out: list[Ask] = []
    if head:
        spec, labels = _group_template(mapping(rcc.get("headGroupSpec")))
        extra: tuple[Mapping[str, Fraction], ...] = ()
        if rcc.get("enableInTreeAutoscaling") is True:
            custom = dig(rcc, "autoscalerOptions").get("resources")
            extra = (cap.container_resources({"resources": custom}) if custom
                     else dict(cap.AUTOSCALER_SIDECAR),)
        out.append(Ask("head", pod_requests(spec, extra_containers=extra), namespace=namespace, spec=spec,
                       labels={**labels, NODE_TYPE_LABEL: "head", RAY_NODE_LABEL: "yes"}))
    for i, g in enumerate(seq(rcc.get("workerGroupSpecs"))):
        if not isinstance(g, Mapping) or g.get("suspend") is True:
            continue
        name = str(g.get("groupName", f"#{i}"))
        reps, hosts, _, _ = cap.group_counts(g)
        if replicas is not None:
            reps = replicas.get(name, 0)
        if reps <= 0:
            continue
        spec, labels = _group_template(g)
        inits = (dict(cap.WAIT_GCS_INIT),) if init_injection else ()
        labels = {**labels, GROUP_LABEL: name, NODE_TYPE_LABEL: "worker", RAY_NODE_LABEL: "yes"}
        out.append(Ask(name, pod_requests(spec, extra_inits=inits), count=reps, hosts=hosts,
                       namespace=namespace, spec=spec, labels=labels))
    return out
