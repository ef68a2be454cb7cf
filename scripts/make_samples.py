"""Build samples/<situation>/{before,after}.yaml from the vendored KubeRay samples.

Each pair is a textual edit of a real sample, the way a PR would change it (comments and
layout kept). Run it, then regenerate the expected reports and read them before committing:

    python scripts/make_samples.py && python scripts/make_samples.py --expected
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT / "samples" / "kuberay-v1.7.0"


def up(name: str) -> str:
    return (UPSTREAM / f"ray-service.{name}.yaml").read_text()


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        if old not in text:
            raise SystemExit(f"edit target not found: {old!r}")
        text = text.replace(old, new)
    return text


LLM = up("llm-serve")
SD = up("stable-diffusion")
SAMPLE = up("sample")
INC = up("incremental-upgrade")
_RAY_VERSION_LINE = '    rayVersion: "2.52.0" # should match the Ray version in the image of the containers\n'
AUTOSCALE = edit(SAMPLE, (_RAY_VERSION_LINE, _RAY_VERSION_LINE + "    enableInTreeAutoscaling: true\n"))

PAIRS: dict[str, tuple[str, str, str]] = {
    "gpu-image-bump": (
        "The LLM service moves to a new Ray image: a whole second RayCluster with 4 more GPUs.",
        LLM, edit(LLM, ("rayproject/ray-llm:2.52.0-py311-cu128", "rayproject/ray-llm:2.53.0-py311-cu128"),
                  ('rayVersion: "2.52.0"', 'rayVersion: "2.53.0"'))),
    "serve-only": (
        "Only the Serve config changes: a price (user_config, lightweight) and a replica count.",
        SAMPLE, edit(SAMPLE, ("            user_config:\n              price: 3",
                              "            user_config:\n              price: 4"),
                     ("          - name: Router\n            num_replicas: 1",
                      "          - name: Router\n            num_replicas: 2"))),
    "replicas-autoscaling": (
        "Worker replicas edited in Git while the autoscaler owns them: ignore in Argo CD.",
        AUTOSCALE, edit(AUTOSCALE, ("    - replicas: 1\n      minReplicas: 1\n      maxReplicas: 5",
                                    "    - replicas: 3\n      minReplicas: 1\n      maxReplicas: 5"))),
    "worker-group-appended": (
        "A GPU worker group is appended: the running RayCluster is updated in place.",
        SD, SD + """    - replicas: 1
      minReplicas: 0
      maxReplicas: 2
      groupName: gpu-group-l4
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray-ml:2.46.0.0e19ea-py39-gpu
            resources:
              limits:
                cpu: "4"
                memory: "16Gi"
                nvidia.com/gpu: "1"
          tolerations:
          - key: "ray.io/node-type"
            operator: "Equal"
            value: "worker"
            effect: "NoSchedule"
"""),
    "tolerations-only": (
        "A GPU toleration added: KubeRay leaves tolerations out of its comparison, nothing happens.",
        SD, edit(SD, ('            effect: "NoSchedule"\n',
                      '            effect: "NoSchedule"\n'
                      '          - key: "nvidia.com/gpu"\n'
                      '            operator: "Exists"\n'
                      '            effect: "NoSchedule"\n'))),
    "strategy-none": (
        "upgradeStrategy None and an image bump: the cluster change is silently not applied.",
        edit(SD, ("spec:\n  serveConfigV2", "spec:\n  upgradeStrategy:\n    type: None\n  serveConfigV2")),
        edit(SD, ("spec:\n  serveConfigV2", "spec:\n  upgradeStrategy:\n    type: None\n  serveConfigV2"),
             ("rayproject/ray-ml:2.46.0.0e19ea-py39-gpu", "rayproject/ray-ml:2.47.0-py39-gpu"),
             ('rayVersion: "2.46.0"', 'rayVersion: "2.47.0"'))),
    "quantity-reformat": (
        "Resources rewritten in other units (2 -> 2000m, 5Gi -> 5120Mi): the operator sees no change.",
        SAMPLE, edit(SAMPLE, ('                cpu: "2"\n                memory: "5Gi"',
                              '                cpu: "2000m"\n                memory: "5120Mi"'),
                     ('                cpu: "500m"\n                memory: "2Gi"',
                      '                cpu: "0.5"\n                memory: "2048Mi"'))),
    "incremental-upgrade": (
        "An image bump under NewClusterWithIncrementalUpgrade: new cluster grown step by step.",
        INC, edit(INC, ("rayproject/ray:2.51.0", "rayproject/ray:2.52.0"),
                  ('rayVersion: "2.51.0"', 'rayVersion: "2.52.0"'))),
}


def write_pairs() -> None:
    for name, (about, before, after) in PAIRS.items():
        d = ROOT / "samples" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "before.yaml").write_text(before)
        (d / "after.yaml").write_text(after)
        (d / "README.md").write_text(f"# {name}\n\n{about}\n")


def write_expected() -> None:
    sys.path.insert(0, str(ROOT))
    import diffing

    # Every pair under samples/, the hand-written ones (the standalone RayCluster situations) too.
    for d in sorted(p for p in (ROOT / "samples").iterdir() if (p / "before.yaml").exists()):
        report = diffing.analyze([("before.yaml", (d / "before.yaml").read_text())],
                                 [("after.yaml", (d / "after.yaml").read_text())])
        (d / "expected.json").write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
        (d / "expected.md").write_text(diffing.render_markdown(report))


if __name__ == "__main__":
    if "--expected" in sys.argv:
        write_expected()
    else:
        write_pairs()
