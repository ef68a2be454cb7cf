"""Will the rollout's pods fit? A placement plan on the live nodes (issue 21; docs/placement.md).

Pure: Node and Pod objects (as the API serves them) and a RayCluster spec in, a plan out.
"""

from diffing.placement.asks import Ask, pod_requests, rollout_asks
from diffing.placement.nodes import Node, read_nodes
from diffing.placement.plan import Plan, pending_asks, place, plan_for

__all__ = ["Ask", "Node", "Plan", "pending_asks", "place", "plan_for", "pod_requests", "read_nodes",
           "rollout_asks"]
