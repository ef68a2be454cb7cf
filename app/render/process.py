"""Running a renderer (kubectl kustomize, kustomize, helm, the Helm SDK child) on untrusted input.

Every child gets: a fixed argv (never a shell), a working directory inside the snapshot, an
environment built from nothing (no token or setting of ours reaches it: only PATH, a HOME and
caches in a throw-away directory, and the locale), its own process group so a timeout kills
grandchildren too, a wall-clock limit, a cap on what it may print, a memory limit and a lower
CPU priority.

The memory limit is ``RLIMIT_DATA`` (the heap and every private writable mapping), set in the child
before it starts the tool, and inherited by its own children (kustomize's ``helm``). A 420-byte
Helm values file of nested YAML aliases drove the Helm child past 8 GB and a ``range until`` template
to 3.5 GB before the output cap: under the limit their allocations fail and the render fails with
them. ``RLIMIT_AS`` would count address space too, and Go reserves about 1 GiB of it that it never
uses (``kubectl kustomize`` of one file does not start under 768 MiB of it, against 64 MiB of data).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
MIB = 1024 * 1024
# A kustomize build of one overlay peaks at 44 MiB resident and a small chart's Helm SDK child at
# 70 MiB, but the SDK child (Python, PyYAML and the Go library) does not start under 256 MiB of
# data: 1 GiB leaves large charts and monorepos room and keeps a runaway render off the host.
DEFAULT_MEMORY_BYTES = 1024 * MIB
MESSAGE_CHARS = 600  # how much of a tool's error message a finding carries
# Renders run below the analyses' CPU priority: in the service a pull request's render (a Helm
# template that loops until its memory limit, a large monorepo) must not take the cores the
# HTTP analyses answer from. Alone on a machine a niced child runs as fast.
RENDER_NICENESS = 10


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Per-render limits (RAYSERVICE_IMPACT_RENDER_TIMEOUT_S / _RENDER_MAX_BYTES); ``memory_bytes``
    is each child's ``RLIMIT_DATA`` (None: no limit)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    memory_bytes: int | None = DEFAULT_MEMORY_BYTES


class RenderError(Exception):
    """A render that did not produce manifests; ``tool`` names the renderer, the message is trimmed."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"{tool}: {trim(message)}")
        self.tool = tool
        self.message = trim(message)


def decode_utf8(tool: str, data: bytes, what: str = "the output", why: str = "") -> str:
    """Text that must be UTF-8 (a renderer's output, a manifest); else a RenderError naming the
    byte: the one decoding rule of every render path, never a lenient reading."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RenderError(tool, f"{what} is not UTF-8 text (invalid byte at offset {exc.start})"
                                + (f": {why}" if why else "")) from None


def trim(message: str, limit: int = MESSAGE_CHARS) -> str:
    """One readable message: whitespace collapsed per line, blank lines dropped, cut in the middle."""
    lines = [" ".join(line.split()) for line in message.strip().splitlines()]
    text = "\n".join(line for line in lines if line)
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} … {text[-(limit - head - 3):]}"


def child_env(scratch: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a renderer: nothing inherited but PATH."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        # Helm keeps its caches and repository config here, never in the user's home.
        "HELM_CACHE_HOME": os.path.join(scratch, "helm-cache"),
        "HELM_CONFIG_HOME": os.path.join(scratch, "helm-config"),
        "HELM_DATA_HOME": os.path.join(scratch, "helm-data"),
        # kustomize looks for exec/Go plugins here; an empty folder holds none.
        "KUSTOMIZE_PLUGIN_HOME": os.path.join(scratch, "kustomize-plugins"),
        # No proxy: a render that reaches for the network fails rather than going anywhere.
        "NO_PROXY": "*",
    }
    if extra:
        env.update(extra)
    return env


def run_tool(tool: str, argv: Sequence[str], *, cwd: str, limits: RenderLimits,
             stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> bytes:
    """Run ``argv`` and return its standard output; :class:`RenderError` on failure.

    The output is read as it comes and the child is killed as soon as it passes
    ``limits.max_bytes``; the wall-clock limit covers the whole run. Standard error is kept
    (capped) for the message.
    """
    with tempfile.TemporaryDirectory(prefix="rsi-child-") as scratch:
        extra = {**memory_env(limits.memory_bytes), **(env or {})}
        proc = _start(tool, argv, cwd=cwd, env=child_env(scratch, extra), memory_bytes=limits.memory_bytes)
        run = _communicate(proc, stdin, limits)
        if run.late:
            raise RenderError(tool, f"took longer than {limits.timeout_s:g} s and was stopped")
        if run.over:
            raise RenderError(tool, f"printed more than {limits.max_bytes} bytes and was stopped")
        code, err = run.code, run.err
        if code != 0 and limits.memory_bytes and _out_of_memory(err):
            raise RenderError(tool, f"needed more than its {limits.memory_bytes // MIB} MiB memory limit and "
                                    "was stopped")
        if code != 0:
            message = err.decode("utf-8", errors="replace").strip() or f"exit code {code}"
            if code < 0:
                message = f"killed by signal {-code}. {message}"
            raise RenderError(tool, message)
        return bytes(run.out)


def _start(tool: str, argv: Sequence[str], *, cwd: str, env: dict[str, str],
           memory_bytes: int | None) -> subprocess.Popen[bytes]:
    """The child, in its own session, under its limits; :class:`RenderError` when it cannot start."""
    try:
        return subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            close_fds=True, preexec_fn=child_setup(memory_bytes))
    except FileNotFoundError:
        raise RenderError(tool, f"{argv[0]} is not installed") from None
    except OSError as exc:
        raise RenderError(tool, f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    except subprocess.SubprocessError as exc:  # the limit or the priority could not be set
        raise RenderError(tool, f"cannot start {argv[0]}: {exc}") from None


@dataclass(slots=True)
class _Run:
    """How a child ended: its exit code, its output and (capped) standard error, and whether it was
    killed for its time (``late``) or its output (``over``)."""

    code: int
    out: bytearray
    err: bytearray
    late: bool
    over: bool


def _communicate(proc: subprocess.Popen[bytes], stdin: bytes | None, limits: RenderLimits) -> _Run:
    """Feed ``stdin``, read both outputs as they come and wait, killing the child's process group
    when its output passes ``limits.max_bytes`` or the run ``limits.timeout_s``."""
    out = bytearray()
    err = bytearray()
    over = threading.Event()

    def pump_out() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(65536):
            if len(out) + len(chunk) > limits.max_bytes:
                over.set()
                _kill(proc)
                return
            out.extend(chunk)

    def pump_err() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read(65536):
            if len(err) < 256 * 1024:
                err.extend(chunk)

    readers = [threading.Thread(target=pump_out, daemon=True),
               threading.Thread(target=pump_err, daemon=True)]
    for t in readers:
        t.start()
    try:
        assert proc.stdin is not None
        if stdin:
            proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    # A timer rather than wait(timeout=): CPython polls with sleeps for the latter, which
    # costs up to 50 ms a render.
    late = threading.Event()

    def expire() -> None:
        late.set()
        _kill(proc)

    timer = threading.Timer(limits.timeout_s, expire)
    timer.start()
    try:
        code = proc.wait()
    finally:
        timer.cancel()
    for t in readers:
        t.join(timeout=5)
    return _Run(code, out, err, late.is_set(), over.is_set())


def child_setup(memory_bytes: int | None) -> Callable[[], None]:
    """The ``preexec_fn`` that sets the child's ``RLIMIT_DATA`` (None: no limit) and its CPU
    priority (``RENDER_NICENESS``).

    It runs in the forked child before ``exec``, while other threads of the parent (renders run on
    a thread pool) may hold locks the child then never sees released: so it makes two system
    calls on values computed here, in the parent, and imports and builds nothing. Setting the
    limit in the child, not with ``prlimit`` after the start, leaves no moment in which the tool
    runs unlimited. Never above the limit this process already has (lowering a limit needs no
    privilege, raising it does)."""
    limits = None
    if memory_bytes:
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        value = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
        limits = (value, value)
    kind, setrlimit, nice, niceness = resource.RLIMIT_DATA, resource.setrlimit, os.nice, RENDER_NICENESS

    def setup() -> None:
        if limits is not None:
            setrlimit(kind, limits)
        nice(niceness)

    return setup


def memory_env(memory_bytes: int | None) -> dict[str, str]:
    """``GOMEMLIMIT`` at three quarters of the limit: the Go tools (kubectl, kustomize, helm, the
    Helm SDK's library) then collect garbage harder before they reach it, instead of failing a
    render whose live memory fits."""
    if not memory_bytes:
        return {}
    return {"GOMEMLIMIT": f"{memory_bytes * 3 // 4 // MIB}MiB"}


def _out_of_memory(err: bytearray) -> bool:
    """Go's ``fatal error: out of memory`` / ``runtime: out of memory``, Go's ``fatal error: runtime:
    cannot allocate memory`` (a failed mmap, e.g. for a new thread's stack), Python's ``MemoryError``
    and the C library's ``Cannot allocate memory``."""
    return (b"out of memory" in err or b"MemoryError" in err or b"Cannot allocate memory" in err
            or b"cannot allocate memory" in err)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
