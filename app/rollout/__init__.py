"""After the merge: follow each RayService, RayCluster and RayJob a deployed change touched, and
report what really happened beside what was predicted (docs/rollout.md)."""
