"""Issue "Green means safe", trees: a revision nested 1 100 folders deep ended ``git BASE HEAD`` in a
RecursionError (exit 1) and left its snapshot in the temp folder on every run (Python 3.11's
``os.walk`` and ``shutil.rmtree`` recurse once per level). Now the walk and the removal keep their
own stack, a revision deeper than 256 levels or holding more than 100 000 entries is refused with
its path, and the temp folder is left empty whatever happens.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from gitops import commit, make_repo, run, write

from app.render.folders import render_folders
from app.render.pipeline import RenderOptions
from app.render.snapshot import (
    MAX_DEPTH,
    MAX_ENTRIES,
    SnapshotError,
    TreeLimitError,
    remove_tree,
    tarball_snapshot,
    walk_files,
)

DEEP = 1_100


@pytest.fixture(autouse=True)
def _empty_tmp_path(tmp_path: Path) -> Iterator[None]:
    """Deep trees are removed here: pytest's own clean-up of old temp folders uses shutil.rmtree."""
    yield
    remove_tree(str(tmp_path))


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of this test's own: snapshots left behind are seen, and other runs' are not."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def deep_folder(top: Path, depth: int, name: str = "d") -> Path:
    """``top/d/d/.../d/x.yaml`` made level by level, each folder opened from its parent
    (``os.makedirs`` recurses too, and paths may grow past PATH_MAX); returns ``top``."""
    top.mkdir(exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with os.fdopen(os.open("x.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write("a: 1\n")
    finally:
        os.close(fd)
    return top


def tarball(names: list[str]) -> bytes:
    """A GitHub tarball (one top folder, gzip) holding these files."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(f"owner-repo-abc1234/{name}")
            info.size = 5
            tar.addfile(info, io.BytesIO(b"a: 1\n"))
    return raw.getvalue()


def test_git_range_with_a_1100_deep_folder_is_refused_and_leaves_no_snapshot(
        tmp_path: Path, temp: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = commit(repo)
    deep_folder(repo / "overlays/prod", DEEP)
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 2  # invalid input, said with the path: never a pass (was: exit 1, RecursionError)
    assert "overlays/prod/d/d/d" in report["stderr"] and f"nested more than {MAX_DEPTH} levels deep" in \
        report["stderr"]
    assert list(temp.iterdir()) == []  # was: the snapshot, left behind on every run


def test_a_tarball_too_deep_is_a_render_failed_finding(temp: Path) -> None:
    from app.github.rendering import TARBALL_ROOT, _render_tarballs

    deep = tarball(["/".join(["d"] * (MAX_DEPTH + 1)) + "/x.yaml", "rs.yaml"])
    fine = tarball(["rs.yaml"])
    pr = SimpleNamespace(base_sha="a" * 40, head_sha="b" * 40)
    rendered = _render_tarballs(fine, deep, pr, {"rs.yaml"}, RenderOptions())  # type: ignore[arg-type]
    [note] = rendered.notes
    assert (note.severity, note.code, note.path) == ("error", "render-failed", TARBALL_ROOT)
    assert note.message.startswith("head (bbbbbbbbbbbb): d/d/d/") and "levels deep" in note.message
    assert not rendered.before and not rendered.after
    assert list(temp.iterdir()) == []


def test_a_tarball_with_too_many_entries_is_refused(temp: Path) -> None:
    assert MAX_ENTRIES == 100_000  # the default; 50 below takes the same path in a fraction of the time
    with pytest.raises(TreeLimitError, match="more than 50 files, folders and symlinks"), \
            tarball_snapshot(tarball([f"f{i}.yaml" for i in range(51)]), "abc", max_entries=50):
        pass
    with tarball_snapshot(tarball([f"f{i}.yaml" for i in range(50)]), "abc", max_entries=50) as snap:
        assert len(os.listdir(snap.root)) == 50
    assert list(temp.iterdir()) == []


def test_a_tree_exactly_at_the_depth_limit_is_unpacked(temp: Path) -> None:
    name = "/".join(["d"] * (MAX_DEPTH - 1)) + "/x.yaml"  # 256 path components
    with tarball_snapshot(tarball([name]), "abc") as snap:
        assert os.path.isfile(snap.path(name))
    assert list(temp.iterdir()) == []


def test_walk_files_is_os_walk_without_recursion(tmp_path: Path) -> None:
    for rel in ("b/y.yaml", "a/x.yaml", "a/c/z.yaml", "top.yaml", ".git/config", "a/.git/HEAD"):
        write(tmp_path, rel, "k: v\n")
    os.symlink("a", tmp_path / "link")  # listed with the folders, never entered
    expected = []
    for top, dirs, files in os.walk(tmp_path):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        expected.append((top, list(dirs), sorted(files)))
    assert list(walk_files(str(tmp_path))) == expected
    # pruning in place skips a folder, as with os.walk
    seen = []
    for top, dirs, _ in walk_files(str(tmp_path)):
        seen.append(os.path.relpath(top, tmp_path))
        if "a" in dirs:
            dirs.remove("a")
    assert seen == [".", "b"]


def test_walk_files_goes_past_the_recursion_limit_and_refuses_past_its_depth(tmp_path: Path) -> None:
    deep_folder(tmp_path, DEEP)
    with pytest.raises(RecursionError):  # what the walk replaces
        list(os.walk(tmp_path))
    assert sum(1 for _ in walk_files(str(tmp_path), max_depth=DEEP)) == DEEP + 1
    with pytest.raises(TreeLimitError, match=r"^d/d/.*: nested more than 256 levels deep"):
        list(walk_files(str(tmp_path)))


def test_remove_tree_removes_what_rmtree_cannot(tmp_path: Path) -> None:
    deep = deep_folder(tmp_path / "deep", DEEP)
    with pytest.raises(RecursionError):  # what the removal replaces
        shutil.rmtree(deep, ignore_errors=True)
    long = deep_folder(tmp_path / "long", 40, "n" * 200)
    os.symlink("/etc", deep / "d" / "etc")  # never followed
    remove_tree(str(deep))
    remove_tree(str(long))  # paths of 8 000 characters, over PATH_MAX
    assert sorted(os.listdir(tmp_path)) == []
    assert os.path.isdir("/etc")
    remove_tree(str(tmp_path / "gone"))  # nothing there: nothing to do, no error


def test_analyze_folders_with_a_deep_directory_is_a_render_failed_finding(tmp_path: Path) -> None:
    before = tmp_path / "before"
    after = tmp_path / "after"
    before.mkdir()
    after.mkdir()
    deep_folder(after, DEEP)
    out = render_folders(str(before), str(after), RenderOptions())
    [note] = out.notes
    assert note.code == "render-failed" and "nested more than 256 levels deep" in note.message
    assert isinstance(TreeLimitError("x"), SnapshotError)
