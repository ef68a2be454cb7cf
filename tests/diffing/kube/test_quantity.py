from __future__ import annotations

import pytest

from diffing.kube.quantity import QuantityError, canonical

EQUAL = [("1000m", "1"), ("0.5", "500m"), ("1000", "1k"), ("1G", "1000M"), ("2048Mi", "2Gi"),
         ("0.5Gi", "512Mi"), ("1.5Gi", "1536Mi"), (1, "1"), ("1.0", "1"), ("0Gi", "0"), ("1.5", "1500m")]
DIFFERENT = [("2Gi", "2147483648"), ("1e3", "1k"), ("128974848", "123Mi"), ("1Ki", "1000")]


@pytest.mark.parametrize(("a", "b"), EQUAL)
def test_quantity_canonical_equal(a: object, b: object) -> None:
    assert canonical(a) == canonical(b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_quantity_canonical_keeps_format_family(a: object, b: object) -> None:
    assert canonical(a) != canonical(b)


def test_quantity_canonical_strings() -> None:
    assert [canonical(x) for x in ("1000m", "0.5Gi", "1.5Ki", "1e3", "0.0000000001", "100Mi")] == [
        "1", "512Mi", "1536", "1e3", "1n", "100Mi"]


@pytest.mark.parametrize("bad", ["", "1.2.3", "5GB", "abc", None, True, float("nan")])
def test_quantity_rejects_non_quantities(bad: object) -> None:
    with pytest.raises(QuantityError):
        canonical(bad)
