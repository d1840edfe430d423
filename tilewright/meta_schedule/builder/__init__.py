"""Builders: candidate modules in, artifact files out (TVM's ``ms.builder``)."""

from tilewright.meta_schedule.builder.builder import Builder, BuilderInput, BuilderResult
from tilewright.meta_schedule.builder.local_builder import LocalBuilder

__all__ = ["Builder", "BuilderInput", "BuilderResult", "LocalBuilder"]
