"""The helper modules the tests under tests/diffing share get pytest's assertion rewriting too."""

import pytest

pytest.register_assert_rewrite("tests.diffing.helpers", "tests.diffing.raycluster.cluster",
                               "tests.diffing.rayjob.jobs")
