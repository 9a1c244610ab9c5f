"""What the two Kubernetes targets (Dynamo, llm-d) share: names Kubernetes accepts, the operator's values as
container environment variables, and YAML with a comment head."""

from __future__ import annotations

import re

import yaml

from planner.export.common import NEED, Launch, comment_text
from planner.export.rows import Row, family_skip

GPU_FAMILIES = ("nvidia-gpu",)  # both publish CUDA images only (docs/EXPORT.md)


class ManifestTarget:
    """A target that writes Kubernetes manifests of a CUDA image (Dynamo, llm-d): NVIDIA GPUs only."""

    families = GPU_FAMILIES
    image_words = ""  # the image, as a skipped row's reason names it

    def skip_reason(self, row: Row) -> str | None:
        return family_skip(row, self.families, self.image_words)

    def routers(self, launches: list[Launch]) -> list:
        """None written apart: Dynamo's Frontend and llm-d's InferencePool route a workload's requests."""
        return []


def dns_name(*parts: str) -> str:
    """A DNS-1123 label (lower case, digits and '-', at most 63 characters) from ``parts``."""
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return name[:63].rstrip("-") or "planner"


def k8s_args(args: list[str]) -> list[str]:
    """Arguments with each value the operator supplies as ``$(VAR)``, which Kubernetes expands from the
    container's environment."""
    return [NEED.sub(r"$(\1)", a) for a in args]


def env_of(launch: Launch) -> list[dict]:
    """The container's variables for the values the operator supplies, empty until set (their meaning is in the
    file's head and README.md)."""
    return [{"name": var, "value": ""} for var in launch.needs]


def yaml_file(comments: list[str], documents: list[dict]) -> str:
    head = "".join(f"# {comment_text(c)}\n" for c in comments)  # a newline in a name would start a YAML key
    return head + "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in documents)


def needs_comments(launches: list[Launch]) -> list[str]:
    return [f"set {var} to {what}" for ln in launches for var, what in ln.needs.items()]
