"""Builders: candidate modules in, artifact files out (TVM's ``ms.builder``)."""

from tilewright.meta_schedule.builder.builder import Builder, BuilderInput, BuilderResult
from tilewright.meta_schedule.builder.local_builder import LocalBuilder

# TVM's subclassable spelling; the base class here is a Python class already.
PyBuilder = Builder

__all__ = ["PyBuilder", "Builder", "BuilderInput", "BuilderResult", "LocalBuilder"]
