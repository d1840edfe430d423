"""Targets: what a program is built for (kind, arch, limits), by string, dict, tag or kind."""

from tilewright.target.tags import KINDS, TAGS, KindSpec, list_tags
from tilewright.target.target import Target, TargetKind

__all__ = ["KINDS", "TAGS", "KindSpec", "Target", "TargetKind", "list_tags"]
