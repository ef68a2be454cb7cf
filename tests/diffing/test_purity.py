"""diffing/ is the functional core: it must not import anything that does I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import diffing

CORE = Path(diffing.__file__).resolve().parent
FORBIDDEN = {"fastapi", "starlette", "httpx", "kubernetes", "os", "socket", "subprocess", "app",
             "requests", "urllib", "pathlib", "shutil", "io", "sys", "uvicorn", "http", "asyncio",
             "tempfile", "time", "datetime", "random"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("open", "__import__", "eval",
                                                                             "exec"):
            names.add(node.func.id)  # type: ignore[attr-defined]
    return names


def test_core_imports_nothing_that_does_io() -> None:
    offenders = {str(p.relative_to(CORE)): sorted(imported_modules(p) & (FORBIDDEN | {"open", "__import__",
                                                                                    "eval", "exec"}))
                 for p in CORE.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_public_api_is_exactly_all() -> None:
    public = {name for name in dir(diffing) if not name.startswith("_")}
    submodules = {p.stem for p in CORE.glob("*.py")} | {p.name for p in CORE.iterdir() if p.is_dir()}
    assert public - submodules == set(diffing.__all__)
    assert diffing.__all__ == sorted(diffing.__all__, key=lambda n: (not n.isupper(), n))
