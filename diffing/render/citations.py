"""KubeRay source citations in report texts, as links a reader can follow.

The core's sentences cite the operator's code as ``file:line`` of KubeRay v1.7.0, often with
the short names its modules use (``RJC:988-992`` is ``rayjob_controller.go`` lines 988 to 992;
``RCC``, ``RCJC``, ``VAL``, ``JOB``, ``TYPES`` likewise, several ranges after one name:
``RJC:988-992, 560-584``). The JSON report keeps them as they are; what a person reads (the PR
comment, the job summary) gets each one as a link to the upstream lines, named by its file.

The line numbers are those of v1.7.0, whatever version a report is for (the rules of 1.6.x
reuse the 1.7.0 texts): a link to another tag at these lines would show other code, so every
link goes to :data:`CITED_TAG`.
"""

from __future__ import annotations

import re

CITED_TAG = "v1.7.0"
UPSTREAM = "https://github.com/ray-project/kuberay/blob"

# A short name or a file, as the texts write it → its path in the repository at CITED_TAG.
_OPERATOR = "ray-operator/"
_CONTROLLERS = _OPERATOR + "controllers/ray/"
FILES: dict[str, str] = {
    "RJC": _CONTROLLERS + "rayjob_controller.go",
    "RCC": _CONTROLLERS + "raycluster_controller.go",
    "RCJC": _CONTROLLERS + "raycronjob_controller.go",
    "VAL": _CONTROLLERS + "utils/validation.go",
    "JOB": _CONTROLLERS + "common/job.go",
    "TYPES": _OPERATOR + "apis/ray/v1/raycronjob_types.go",
    "rayjob_controller.go": _CONTROLLERS + "rayjob_controller.go",
    "raycluster_controller.go": _CONTROLLERS + "raycluster_controller.go",
    "rayservice_controller.go": _CONTROLLERS + "rayservice_controller.go",
    "raycronjob_controller.go": _CONTROLLERS + "raycronjob_controller.go",
    "networkpolicy_controller.go": _CONTROLLERS + "networkpolicy_controller.go",
    "validation.go": _CONTROLLERS + "utils/validation.go",
    "utils/validation.go": _CONTROLLERS + "utils/validation.go",
    "util.go": _CONTROLLERS + "utils/util.go",
    "utils/util.go": _CONTROLLERS + "utils/util.go",
    "constant.go": _CONTROLLERS + "utils/constant.go",
    "utils/constant.go": _CONTROLLERS + "utils/constant.go",
    "pod.go": _CONTROLLERS + "common/pod.go",
    "common/pod.go": _CONTROLLERS + "common/pod.go",
    "common/job.go": _CONTROLLERS + "common/job.go",
    "common/association.go": _CONTROLLERS + "common/association.go",
    "raycronjob_types.go": _OPERATOR + "apis/ray/v1/raycronjob_types.go",
    "main.go": _OPERATOR + "main.go",
    "features.go": _OPERATOR + "pkg/features/features.go",
    "pkg/features/features.go": _OPERATOR + "pkg/features/features.go",
}
# The name as a reader should see it (the short names are the modules' own shorthand).
SHOWN = {"RJC": "rayjob_controller.go", "RCC": "raycluster_controller.go", "RCJC": "raycronjob_controller.go",
         "VAL": "validation.go", "JOB": "common/job.go", "TYPES": "raycronjob_types.go"}

_RANGE = r"\d+(?:-\d+)?"
_NAMES = "|".join(sorted((re.escape(k) for k in FILES), key=len, reverse=True))
CITATION = re.compile(rf"(?<![\w/.])(?P<name>{_NAMES}):(?P<ranges>{_RANGE}(?:, {_RANGE}(?![\w.:/]))*)"
                      r"(?![\w.:/])")
_CODE = re.compile(r"(`+)(.*?)\1", re.DOTALL)


def url(name: str, lines: str) -> str:
    """The upstream address of ``lines`` (``988-992`` or ``110``) of the file cited as ``name``."""
    first, _, last = lines.partition("-")
    anchor = f"#L{first}" + (f"-L{last}" if last else "")
    return f"{UPSTREAM}/{CITED_TAG}/{FILES[name]}{anchor}"


def _linked(m: re.Match[str]) -> str:
    name = m["name"]
    ranges = m["ranges"].split(", ")
    shown = SHOWN.get(name, name)
    links = [f"[{shown}:{ranges[0]}]({url(name, ranges[0])})"]
    links += [f"[{r}]({url(name, r)})" for r in ranges[1:]]
    return ", ".join(links)


def link_citations(text: str) -> str:
    """``text`` (markdown) with every citation outside code spans turned into links."""
    out, at = [], 0
    for code in _CODE.finditer(text):
        out.append(CITATION.sub(_linked, text[at:code.start()]))
        out.append(code.group(0))
        at = code.end()
    out.append(CITATION.sub(_linked, text[at:]))
    return "".join(out)


def expand_citations(text: str) -> str:
    """``text`` (plain) with the short names spelled as files: ``RJC:988-992`` reads
    ``rayjob_controller.go:988-992`` where no link can be made (annotations, SARIF)."""
    return CITATION.sub(lambda m: f"{SHOWN.get(m['name'], m['name'])}:{m['ranges']}", text)
