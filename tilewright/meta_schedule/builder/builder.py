"""The builder protocol: modules in, compiled artifacts out (TVM's ``ms.builder`` names).

A ``BuilderInput`` is plain data (the module as script text travels as the module itself;
pickling an ``IRModule`` is supported), a ``BuilderResult`` names the artifact file that
``Artifact.save`` wrote, or the error. A builder never raises for a bad candidate: a build
that fails, hangs or crashes becomes a result with ``error_msg``.
"""

from __future__ import annotations

import dataclasses

from tilewright.ir import IRModule
from tilewright.target import Target


@dataclasses.dataclass(frozen=True)
class BuilderInput:
    """One module to build for ``target``."""

    mod: IRModule
    target: Target


@dataclasses.dataclass(frozen=True)
class BuilderResult:
    """``artifact_path`` (an ``Artifact.save`` path) when the build succeeded, else
    ``error_msg`` says why (compile error, timeout, crash)."""

    artifact_path: str | None = None
    error_msg: str | None = None


class Builder:
    """Builds candidates; subclasses implement ``build``."""

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        """One result per input, in order."""
        raise NotImplementedError(f"{type(self).__name__} does not implement build")
