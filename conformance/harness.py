"""Building and running the Go harness (conformance/*.go) from Python.

Everything the build needs lives under ``.cache/conformance/`` (git-ignored): the Go module cache
(``gomod``), the build cache (``gocache``), KubeRay's source (``src/ray-operator-v1.7.0``) and
the binary (``bin``). KubeRay's ``ray-operator`` module at v1.7.0 comes, in this order, from
``$KUBERAY_SRC`` (a ray-operator directory), the Go module proxy, or ``$KUBERAY_GIT`` (a clone
of github.com/ray-project/kuberay, tag ``ray-operator/v1.7.0``).

The version axis: KubeRay v1.6.2 (``version="1.6.2"``) comes from the Go module proxy only; its
source (CRDs, config/samples) goes to ``src/ray-operator-v1.6.2`` and the harness is built with
``-tags kuberay_v1_6 -modfile v1.6.2/go.mod`` (kuberay_v1_6.go adapts what differs in its API).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(ROOT, ".cache", "conformance")
TAG = "v1.7.0"
COMMIT = "59d663aeec13760646da3db9c1cf8cfe883e30b7"  # ray-operator/v1.7.0
SRC = os.path.join(CACHE, "src", f"ray-operator-{TAG}")  # the replace target in go.mod
MODULE = "github.com/ray-project/kuberay/ray-operator"
VERSIONS = ("1.7.0", "1.6.2")  # the default build first
# go build arguments per version beyond the default build's
BUILD_ARGS = {"1.7.0": (), "1.6.2": ("-tags", "kuberay_v1_6", "-modfile", os.path.join("v1.6.2", "go.mod"))}


def src_dir(version: str = "1.7.0") -> str:
    """Where KubeRay's ray-operator source for ``version`` is unpacked (CRDs, samples)."""
    return os.path.join(CACHE, "src", f"ray-operator-v{version}")


class Unavailable(Exception):
    """The harness cannot be built here (no Go, no KubeRay source): a reason, not a failure."""


def go_env() -> dict[str, str]:
    """Go's caches under the repository's .cache/conformance/, or under $CONFORMANCE_GO_CACHE
    (a folder kept between fresh clones, e.g. by CI: a warm build takes seconds, a cold one two
    minutes). The KubeRay source stays in the repository's cache: go.mod's replace points there."""
    env = dict(os.environ)
    base = os.environ.get("CONFORMANCE_GO_CACHE") or CACHE
    env.update(GOMODCACHE=os.path.join(base, "gomod"), GOCACHE=os.path.join(base, "gocache"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    return env


def _run(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), env=go_env(), text=True, capture_output=True, check=False, **kw)


def ensure_source(log: list[str] | None = None, version: str = "1.7.0") -> str:
    """KubeRay's ray-operator source under the cache (see the module docstring)."""
    log = log if log is not None else []
    if version != "1.7.0":
        return _from_proxy(version, log)
    if os.path.exists(os.path.join(SRC, "go.mod")):
        return SRC
    os.makedirs(os.path.dirname(SRC), exist_ok=True)
    given = os.environ.get("KUBERAY_SRC")
    if given:
        if not os.path.exists(os.path.join(given, "go.mod")):
            raise Unavailable(f"KUBERAY_SRC={given} has no go.mod")
        _copy(given, SRC)
        log.append(f"source: copied from KUBERAY_SRC={given}")
        return SRC
    if shutil.which("go"):
        p = _run(["go", "mod", "download", "-json", f"{MODULE}@{TAG}"], cwd=HERE)
        info = json.loads(p.stdout or "{}") if p.stdout.strip().startswith("{") else {}
        if info.get("Dir") and not info.get("Error"):
            _copy(info["Dir"], SRC)
            log.append(f"source: Go module proxy ({info['Dir']})")
            return SRC
        why = (info.get("Error") or p.stderr).strip()
        log.append(f"source: the Go module proxy does not serve it: {why}")
    git_dir = os.environ.get("KUBERAY_GIT")
    if git_dir:
        _from_git(git_dir)
        log.append(f"source: git archive of {git_dir} at {TAG} ({COMMIT[:8]})")
        return SRC
    raise Unavailable("KubeRay ray-operator v1.7.0 source not found: " + "; ".join(log) +
                      "; set KUBERAY_SRC to a ray-operator directory or KUBERAY_GIT to a clone of "
                      "ray-project/kuberay")


def _from_proxy(version: str, log: list[str]) -> str:
    dst = src_dir(version)
    if os.path.exists(os.path.join(dst, "go.mod")):
        return dst
    if not shutil.which("go"):
        raise Unavailable("no `go` on PATH")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    t = time.monotonic()
    p = _run(["go", "mod", "download", "-json", f"{MODULE}@v{version}"], cwd=HERE)
    info = json.loads(p.stdout or "{}") if p.stdout.strip().startswith("{") else {}
    if not info.get("Dir") or info.get("Error"):
        why = (info.get("Error") or p.stderr).strip()
        raise Unavailable(f"KubeRay ray-operator v{version} source not found: the Go module proxy "
                          f"does not serve it: {why}")
    _copy(info["Dir"], dst)
    log.append(f"source v{version}: Go module proxy ({info['Dir']}, {time.monotonic() - t:.1f} s)")
    return dst


def _copy(src: str, dst: str) -> None:
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("*_test.go", "test", "docs"))
    for d, _, files in os.walk(tmp):  # the module cache is read-only
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    os.replace(tmp, dst)


def _from_git(git_dir: str) -> None:
    rev = subprocess.run(["git", "-C", git_dir, "rev-parse", f"ray-operator/{TAG}^{{commit}}"],
                         capture_output=True, text=True, check=False).stdout.strip()
    if rev != COMMIT:
        raise Unavailable(f"{git_dir}: tag ray-operator/{TAG} is {rev or 'missing'}, expected {COMMIT}")
    tmp = tempfile.mkdtemp(dir=os.path.dirname(SRC))
    try:
        archive = subprocess.run(["git", "-C", git_dir, "archive", "--format=tar", COMMIT, "ray-operator"],
                                 capture_output=True, check=True).stdout
        path = os.path.join(tmp, "src.tar")
        with open(path, "wb") as f:
            f.write(archive)
        with tarfile.open(path) as tar:
            tar.extractall(tmp, filter="data")
        _copy(os.path.join(tmp, "ray-operator"), SRC)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build(log: list[str] | None = None, version: str = "1.7.0") -> str:
    """The harness binary for KubeRay ``version``, built when its sources changed. Raises
    :class:`Unavailable`."""
    log = log if log is not None else []
    if not shutil.which("go"):
        raise Unavailable("no `go` on PATH")
    if version not in BUILD_ARGS:
        raise Unavailable(f"no harness build for KubeRay {version} (known: {', '.join(VERSIONS)})")
    ensure_source(log, version)
    digest = hashlib.sha256(" ".join(BUILD_ARGS[version]).encode())
    modfile_dir = os.path.join(HERE, f"v{version}")
    for d in (HERE, modfile_dir) if version != "1.7.0" else (HERE,):
        for name in sorted(os.listdir(d)):
            if name.endswith((".go", ".mod", ".sum")):
                with open(os.path.join(d, name), "rb") as f:
                    digest.update(name.encode() + f.read())
    prefix = "conformance-" if version == "1.7.0" else f"conformance-v{version}-"
    binary = os.path.join(CACHE, "bin", f"{prefix}{digest.hexdigest()[:12]}")
    if os.path.exists(binary):
        log.append(f"build: cached {binary}")
        return binary
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    t = time.monotonic()
    p = _run(["go", "build", *BUILD_ARGS[version], "-o", binary + ".tmp", "."], cwd=HERE)
    if p.returncode != 0:
        raise RuntimeError(f"go build failed:\n{p.stderr}")
    os.replace(binary + ".tmp", binary)
    others = tuple(f"conformance-v{v}-" for v in VERSIONS if v != "1.7.0")
    for old in os.listdir(os.path.dirname(binary)):  # one binary per version (54 MB each)
        mine = old.startswith(prefix) and (version != "1.7.0" or not old.startswith(others))
        if mine and os.path.join(os.path.dirname(binary), old) != binary:
            os.remove(os.path.join(os.path.dirname(binary), old))
    log.append(f"build v{version}: {time.monotonic() - t:.1f} s")
    return binary


def run(binary: str, cases: Sequence[dict[str, Any]], jobs: int | None = None,
        version: str = "1.7.0") -> dict[str, dict[str, Any]]:
    """Run the cases through the harness built for ``version``, ``jobs`` processes at a time;
    results by case id."""
    jobs = jobs or max(1, min(os.cpu_count() or 1, 4))
    shards = [list(cases[i::jobs]) for i in range(jobs)]
    crds = os.path.join(src_dir(version), "config", "crd", "bases")

    def one(shard: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not shard:
            return []
        text = "\n".join(json.dumps({k: c[k] for k in ("id", "version", "featureGates", "env", "kind",
                                                       "before", "after")}) for c in shard)
        p = subprocess.run([binary, "-crds", crds], input=text, text=True, capture_output=True, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"harness failed ({p.returncode}):\n{p.stderr[-4000:]}")
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]

    with ThreadPoolExecutor(jobs) as pool:
        results = [r for part in pool.map(one, shards) for r in part]
    return {r["id"]: r for r in results}
