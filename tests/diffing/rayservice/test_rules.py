"""The RayService rule table (diffing/rayservice/rules.py): first match wins, so no rule may hide a
later one; autoscaler-owned and muted fields.
"""

from __future__ import annotations

from diffing.rayservice.rules import Category
from diffing.versions import rules_for


def test_rules_table_has_no_shadowed_rule_and_muted_set() -> None:
    rules = rules_for("1.7.0")
    for i, rule in enumerate(rules.rules):
        earlier = [r for r in rules.rules[:i] if rule.pattern[: len(r.pattern)] == r.pattern]
        assert not earlier, f"{rule.pattern} is shadowed by {earlier[0].pattern}"
    assert rules.category_of(("spec", "rayClusterConfig", "workerGroupSpecs", "[]", "replicas")).category \
        == Category.AUTOSCALER_OWNED
    assert ("spec", "rayClusterConfig", "suspend") in rules.muted_patterns
