"""The ``rayservice-impact`` command line.

Exit codes (docs/contract.md; named in :mod:`app.output`): 0 approve / ignore-differences, 3 hold,
2 invalid input or usage (the message names the file, document and line), 1 unexpected internal
error. Which one a run ends with is decided here and nowhere else.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import diffing
from diffing.errors import DiffingError, ManifestError
from diffing.hints import Any
from diffing.kinds import NAMES_TEXT

from .files import InputFileError, read_policy, read_text
from .output import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    FORMATS,
    UsageError,
    package_version,
    write_report,
)


def _headroom(values: Sequence[str] | None, known: Sequence[str] = ()) -> dict[str, str] | None:
    """``--headroom RESOURCE=N ...``; a negative, non-numeric or absurd N is a usage error, and so is
    a RESOURCE no pod can request (``gpu``: the message names ``nvidia.com/gpu``). ``known``: the
    policy's ``accelerators``, taken as they are."""
    from diffing.policy import amount_of

    if not values:
        return None
    out = {}
    for item in values:
        name, sep, amount = item.partition("=")
        name, amount = name.strip(), amount.strip()
        if not sep or not name or not amount:
            raise UsageError(f"--headroom {item!r}: expected RESOURCE=N, e.g. nvidia.com/gpu=8")
        try:
            amount_of(name, amount, "headroom", known=known)
        except DiffingError as exc:
            raise UsageError(f"--headroom {item!r}: {getattr(exc, 'reason', exc)}") from None
        out[name] = amount
    return out


def add_analysis_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="output format (default: markdown on a terminal, else json); github: workflow "
                        "commands that annotate the lines of the change; sarif: SARIF 2.1.0; "
                        "codequality: GitLab's Code Quality report (JSON)")
    p.add_argument("--output", metavar="FORMAT=FILE", action="append", default=[], type=_output_arg,
                   help="also write the same report as FORMAT to FILE (repeatable; one analysis for "
                        "every format, e.g. --output codequality=gl-code-quality-report.json)")
    p.add_argument("--kuberay-version", default=None,
                   help="operator version whose rules apply (default 1.7.0 or "
                        "$RAYSERVICE_IMPACT_KUBERAY_VERSION)")
    p.add_argument("--policy", metavar="FILE", help="policy YAML (default $RAYSERVICE_IMPACT_POLICY_FILE)")
    p.add_argument("--headroom", metavar="RESOURCE=N", action="append",
                   help="free capacity known to you, e.g. nvidia.com/gpu=8")
    p.add_argument("--crd", metavar="FILE", help="a RayService CRD whose schema replaces the built-in one")


def _output_arg(value: str) -> tuple[str, str]:
    fmt, sep, path = value.partition("=")
    if not sep or fmt not in FORMATS or not path:
        raise argparse.ArgumentTypeError(
            f"expected FORMAT=FILE with FORMAT one of {', '.join(FORMATS)}: {value!r}")
    return fmt, path


def add_render_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--render", choices=("auto", "none"), default="auto",
                   help="render kustomize / Helm / Argo CD Applications (auto, the default) or read "
                        "files as they are (none)")
    p.add_argument("--kustomize", choices=("kubectl", "kustomize"), default=None,
                   help="kustomize renderer when both are on PATH (default: kubectl kustomize)")


def render_options(args: argparse.Namespace) -> Any:
    from . import environ

    try:
        return environ.render_options(kustomize=args.kustomize)
    except environ.SettingsError as exc:
        raise UsageError(str(exc)) from None


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (``importlib.metadata``
    alone takes longer to import than an ``analyze`` run on small files)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {package_version()}\n")
        parser.exit()


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it ($COLUMNS, else the
    terminal of standard output, else 80), without importing shutil (with bz2, lzma and zlib):
    argparse's help formatter imports it for every parser it builds, help asked or not."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help formatter (and its subcommands') is :class:`_HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rayservice-impact",
        description=f"Predict what the KubeRay operator does with a {NAMES_TEXT} change, "
                    "and what it costs.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("analyze", help="compare two manifest files or folders")
    p.add_argument("before", help="YAML file, or a kustomization / chart folder, before the change "
                                  "('-' = stdin, /dev/null = nothing)")
    p.add_argument("after", help="YAML file or folder after the change")
    add_analysis_options(p)
    add_render_options(p)
    p = sub.add_parser("git", help="compare what two git revisions deploy (rendered kustomize, Helm, "
                                   "Argo CD Applications, plain YAML)",
                       description="BASE HEAD (or BASE..HEAD) compares the two revisions as they are; "
                                   "BASE...HEAD compares the merge base of BASE and HEAD with HEAD "
                                   "(what HEAD changed since it branched off), as git diff does.")
    p.add_argument("base", metavar="BASE", help="base revision, or a range BASE..HEAD / BASE...HEAD")
    p.add_argument("head", metavar="HEAD", nargs="?", default=None,
                   help="head revision (omitted with a range)")
    p.add_argument("--repo", default=".", help="repository path (default: .)")
    p.add_argument("--paths", nargs="+", action="extend", metavar="GLOB",
                   help="only changes to these pathspecs (default: every file; *.yaml *.yml "
                        "with --render none)")
    p.add_argument("--repo-url", default=None,
                   help="this repository's URL, to tell its Argo CD Applications from others' "
                        "(default: the origin remote)")
    add_analysis_options(p)
    add_render_options(p)
    p = sub.add_parser("serve", help="run the HTTP service")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p = sub.add_parser("argocd-presync", help="run as an Argo CD PreSync hook")
    p.add_argument("--app", required=True, help="Argo CD Application name")
    p.add_argument("--app-namespace", default=None, help="Application namespace (apps in any namespace)")
    add_analysis_options(p)
    return parser


def analysis_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Options shared by analyze, git and argocd-presync: flag > environment > default."""
    from . import environ

    try:
        version = args.kuberay_version or environ.kuberay_version()
    except environ.SettingsError as exc:
        raise UsageError(str(exc)) from None
    policy = read_policy(args.policy) if args.policy else None
    if policy is None and not args.policy and (path := environ.policy_file()) is not None:
        try:
            policy = read_policy(path, variable="RAYSERVICE_IMPACT_POLICY_FILE")
        except InputFileError as exc:
            raise UsageError(str(exc)) from None
    return {
        "kuberay_version": version,
        "headroom": _headroom(args.headroom, (policy or {}).get("accelerators") or ()),
        "policy": policy,
        "crd": read_text(args.crd) if args.crd else None,
    }


def _cmd_analyze(args: argparse.Namespace) -> int:
    import os

    from diffing.operator.judge import with_upgrade_in

    if args.before == "-" and args.after == "-":
        raise UsageError("only one of BEFORE and AFTER can be '-' (standard input)")
    kwargs = analysis_kwargs(args)
    if args.render == "auto" and (os.path.isdir(args.before) or os.path.isdir(args.after)):
        from .render.folders import render_folders
        from .render.pipeline import analyze_rendered

        rendered = render_folders(args.before, args.after, render_options(args))
        report = analyze_rendered(rendered, **kwargs)
        report = with_upgrade_in(report, rendered.before, rendered.after, policy=kwargs["policy"])
    else:
        before, after = read_text(args.before), read_text(args.after)
        report = diffing.analyze([(args.before, before)], [(args.after, after)], **kwargs)
        report = with_upgrade_in(report, [(args.before, before)], [(args.after, after)],
                                 policy=kwargs["policy"])
    write_report(report, args.format, args.output)
    return report.exit_code


def _cmd_git(args: argparse.Namespace) -> int:
    from diffing.operator.judge import with_upgrade_in

    from .gitdiff import SUBMODULE_MOVED, GitError, changed_manifests, changed_submodules, resolve_range

    kwargs = analysis_kwargs(args)
    locate, root_files = None, None
    try:
        base, head = resolve_range(args.repo, args.base, args.head)
        if args.render == "none":
            before, after = changed_manifests(args.repo, base, head, args.paths)
            notes = [diffing.Finding("error", "unknown-source", path, SUBMODULE_MOVED)
                     for path in changed_submodules(args.repo, base, head)]
            report = diffing.analyze(before, after, notes=notes, **kwargs)
            report = with_upgrade_in(report, before, after, policy=kwargs["policy"])
        else:
            from .render.pipeline import analyze_rendered
            from .render.repo import render_git_range

            rendered = render_git_range(args.repo, base, head, args.paths,
                                        render_options(args), repo_url=args.repo_url)
            report = analyze_rendered(rendered, **kwargs)
            from .annotate import rendered_locator

            locate = rendered_locator(rendered, rendered.read_head)  # the PR's own lines, for annotations
            root_files = rendered.root_files
    except GitError as exc:
        raise UsageError(str(exc)) from None
    write_report(report, args.format, args.output, locate, root_files)
    return report.exit_code



def _server_extra(command: str) -> None:
    """A CLI-only install has no server stack: say how to get it instead of a traceback."""
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn", "kubernetes") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"{command} needs the [server] extra ({', '.join(missing)} missing); install it "
                         f"from where this copy came from: {_server_install_hint()}")


def _server_install_hint() -> str:
    """The command that adds the [server] extra to this install. The package is not on an index:
    it is installed from a clone or a built wheel, which pip records (PEP 610 direct_url.json)."""
    import json
    import shlex
    from importlib.metadata import distributions
    from urllib.parse import unquote, urlparse

    source = "rayservice-impact"  # an install from an index, or one pip did not record
    url = ""
    # the first copy that says where it came from: a build's egg-info in the working directory
    # comes first on sys.path and records nothing
    for dist in distributions(name="rayservice-impact"):
        try:
            url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        except (ValueError, AttributeError):
            url = ""
        if url:
            break
    if url.startswith("file://"):
        source = unquote(urlparse(url).path)
    spec = shlex.quote(f"{source}[server]")
    if "/pipx/venvs/" in sys.prefix.replace("\\", "/"):
        return f"pipx install --force {spec}"
    return f"{shlex.quote(sys.executable)} -m pip install {spec}"


def _cmd_serve(args: argparse.Namespace) -> int:
    _server_extra("serve")
    from .server import run

    return run(host=args.host, port=args.port)


def _cmd_argocd(args: argparse.Namespace) -> int:
    _server_extra("argocd-presync")
    from .hooks.argocd import run_presync

    return run_presync(args, analysis_kwargs(args))


COMMANDS = {"analyze": _cmd_analyze, "git": _cmd_git, "serve": _cmd_serve, "argocd-presync": _cmd_argocd}


def split_headroom(argv: Sequence[str]) -> list[str]:
    """``--headroom a=1 b=2 FILE`` → ``--headroom=a=1 --headroom=b=2 FILE``: the option takes the
    RESOURCE=N words that follow it and no more, so it never swallows the positional arguments."""
    out: list[str] = []
    taking = pending = False  # after --headroom / and nothing taken yet
    for word in argv:
        if taking and "=" in word and not word.startswith("-"):
            out.append(f"--headroom={word}")
            pending = False
            continue
        if pending:
            out.append("--headroom")  # no value followed: argparse says so
        taking = pending = word == "--headroom"
        if not taking:
            out.append(word)
    if pending:
        out.append("--headroom")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(split_headroom(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse already printed the usage message
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    try:
        return COMMANDS[args.command](args)
    except ManifestError as exc:
        print(f"rayservice-impact: invalid input: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except (DiffingError, InputFileError, UsageError) as exc:
        print(f"rayservice-impact: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the contract's "unexpected internal error"
        print(f"rayservice-impact: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
