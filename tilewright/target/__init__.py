"""Targets: what a program is built for (kind, arch, limits), by string, dict or tag."""

from tilewright.target.tags import TAGS, list_tags
from tilewright.target.target import Target, TargetKind

__all__ = ["TAGS", "Target", "TargetKind", "list_tags"]
