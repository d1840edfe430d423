"""Targets: what a program is built for (kind, arch, limits), by string, dict, tag or kind."""

from tilewright.target.tags import KINDS, TAGS, KindSpec, list_tags
from tilewright.target.target import Target, TargetKind


def cuda(
    model: str = "unknown", arch: str | None = None, options: list[str] | None = None
) -> Target:
    """A CUDA target (TVM's ``tvm.target.cuda``): ``-arch`` when given, then ``options``.

    Example: ``tw.target.cuda(arch="sm_90")`` is ``Target("cuda -arch=sm_90")``.
    """
    parts = ["cuda", *([f"-model={model}"] if model != "unknown" else [])]
    parts += [f"-arch={arch}"] if arch else []
    return Target(" ".join([*parts, *(options or [])]))


__all__ = ["KINDS", "TAGS", "KindSpec", "Target", "TargetKind", "cuda", "list_tags"]
