"""The real helm and kustomize, built from their Go modules for the tests (tests/tools.py).

``real_helm`` and ``real_kustomize`` give the path of the built binary, once per session. Where it
cannot be built (no Go, the module proxy unreachable) every test that asks for it is skipped with
a reason that starts ``REAL HELM NOT BUILT`` / ``REAL KUSTOMIZE NOT BUILT``: pyproject's ``-ra``
lists it in the summary of every run, as tests/conformance does with ``CONFORMANCE NOT RUN``.
A compile error is an error, not a skip.
"""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # tests/tools.py imports conformance.harness, both from the repository root
    sys.path.insert(0, ROOT)

from tests import tools  # noqa: E402

# A cold build of helm takes minutes on 2 cores (kustomize about one); pytest-timeout counts
# fixture setup into the first test that asks for the tool.
BUILD_TIMEOUT_S = 1800
# `engine` asks for helm_on_path at run time, for its "binary" case.
_FIXTURES = {"real_helm", "real_kustomize", "helm_on_path", "engine"}
_built: dict[str, str | BaseException] = {}
_skipped: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        mine = str(item.path).startswith(here + os.sep)
        if mine and _FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_S))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One loud line per tool that a test asked for and that was not built."""
    for message in _skipped.values():
        terminalreporter.write_line(f"*** {message}: the tests against it were skipped ***", yellow=True,
                                    bold=True)


def _tool(name: str, label: str) -> str:
    if name not in _built:
        log: list[str] = []
        try:
            _built[name] = tools.build(name, log)
            print("\n" + "\n".join(log), file=sys.stderr)
        except (tools.Unavailable, RuntimeError) as exc:  # built once per session, failed or not
            _built[name] = exc
    found = _built[name]
    if isinstance(found, tools.Unavailable):
        message = f"{label} NOT BUILT: {found}"
        print(f"\n*** {message} ***", file=sys.stderr)
        _skipped[label] = message
        pytest.skip(message)
    if isinstance(found, BaseException):
        raise found
    return found


@pytest.fixture(scope="session")
def real_helm() -> str:
    """helm 4.2.1 (Argo CD v3.5.1's), built from helm.sh/helm/v4 (tools/go/helm)."""
    return _tool("helm", "REAL HELM")


@pytest.fixture(scope="session")
def real_kustomize() -> str:
    """kustomize 5.8.1 (Argo CD v3.5.1's), built from sigs.k8s.io/kustomize/kustomize/v5."""
    return _tool("kustomize", "REAL KUSTOMIZE")


@pytest.fixture
def helm_on_path(real_helm: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The real helm first on PATH, where the product's binary engine looks for ``helm``."""
    monkeypatch.setenv("PATH", f"{os.path.dirname(real_helm)}{os.pathsep}{os.environ.get('PATH', '')}")
    return real_helm


@pytest.fixture(params=["sdk", "binary"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A test that asks for it runs on both Helm engines: ``sdk`` (the helm-python-sdk child; skipped
    without the extra) and ``binary`` (the real helm first on PATH; skipped where it was not built).
    The engine the product picks by itself (``helm_engine()``) is that one too."""
    import app.render.helm as helm_module

    chosen = str(request.param)
    if chosen == "sdk":
        pytest.importorskip("helm_python")
    else:
        request.getfixturevalue("helm_on_path")
    monkeypatch.setattr(helm_module, "helm_engine", lambda: chosen)
    return chosen
