"""app.output: the exit codes every caller shares, and the import graph of app/ (no cycles)."""

from __future__ import annotations

import ast
from pathlib import Path

from github_helpers import manifest

import diffing
from app.output import EXIT_HOLD, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE

APP = Path(__file__).resolve().parents[2] / "app"


def test_exit_codes_are_the_contracts():
    assert (EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_HOLD) == (0, 1, 2, 3)


def test_the_cores_exit_code_agrees_with_the_named_ones():
    hold = diffing.analyze([("a.yaml", manifest("llm.base.yaml"))], [("a.yaml", manifest("llm.head.yaml"))])
    same = diffing.analyze([("a.yaml", manifest("llm.base.yaml"))], [("a.yaml", manifest("llm.base.yaml"))])
    assert (hold.decision, hold.exit_code) == ("hold", EXIT_HOLD)
    assert (same.decision, same.exit_code) == ("approve", EXIT_OK)


def _imports() -> dict[str, set[str]]:
    """Every module of app/ and the modules of app/ it imports, at the top or inside a function."""
    modules = {}
    for path in APP.rglob("*.py"):
        parts = ["app", *path.relative_to(APP).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name.split(".") if is_package else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                targets = [f"{module}.{a.name}" for a in node.names] + [module]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def test_app_has_no_import_cycle():
    graph = _imports()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path[path.index(name):], name))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def test_every_app_module_imports():
    """A module imported only when a route or command loads (a webhook, a hook) still imports: a
    name moved elsewhere fails here, not at a user's first event."""
    import importlib
    import pkgutil

    import app

    broken = []
    for info in pkgutil.walk_packages(app.__path__, "app."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, with its module
            broken.append(f"{info.name}: {exc!r}")
    assert not broken, "\n".join(broken)
