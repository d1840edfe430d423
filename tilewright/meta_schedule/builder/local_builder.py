"""``LocalBuilder``: candidate modules in, artifact files out, built in worker processes.

Each ``BuilderInput`` travels to a worker pickled (an ``IRModule`` pickles in about a
millisecond, faster than printing and re-parsing its script); the worker lowers and
compiles it, saves the artifact into ``artifact_dir`` and sends back the path. A build
that raises, hangs past ``timeout_sec`` or kills its worker becomes an error result; the
worker is replaced and the other candidates still build.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path

from tilewright.artifact import Artifact
from tilewright.ir import IRModule
from tilewright.meta_schedule.builder.builder import Builder, BuilderInput, BuilderResult
from tilewright.meta_schedule.builder.process_pool import WorkerPool
from tilewright.target import Target

BuildFunc = Callable[[IRModule, Target], Artifact]


def default_build(mod: IRModule, target: Target) -> Artifact:
    """Lower, generate and compile ``mod`` (``tw.build_artifact``)."""
    from tilewright.driver import build_artifact

    return build_artifact(mod, target)


def build_and_save(f_build: BuildFunc | None, mod: IRModule, target: Target, out_dir: str) -> str:
    """Build ``mod`` and save its artifact in ``out_dir`` under a fresh name; the path.

    This is what a worker process runs for each candidate.
    """
    artifact = (f_build or default_build)(mod, target)
    if not isinstance(artifact, Artifact):
        raise TypeError(f"the build function returned {type(artifact).__name__}, not an Artifact")
    suffix = _PAYLOAD_SUFFIX.get(artifact.format, artifact.suffix)
    return str(artifact.save(Path(out_dir) / f"{uuid.uuid4().hex}.{suffix}"))


# File suffixes of compiled payloads; a source payload keeps its language's suffix.
_PAYLOAD_SUFFIX = {"c-library": "so", "cubin": "cubin"}


class LocalBuilder(Builder):
    """Builds candidates in parallel worker processes on this machine (TVM's
    ``ms.builder.LocalBuilder``).

    Arguments:
        max_workers: processes building at once (default: one per core).
        timeout_sec: the longest one build may take; past it the worker is killed and the
            result says ``timeout after 30 s``.
        artifact_dir: where artifacts are saved (default: a new temporary directory).
        f_build: replaces the compile step: a picklable top-level function
            ``(mod, target) -> Artifact`` (default: ``tw.build_artifact``).

    The workers stay alive between ``build`` calls; ``close()`` stops them.

    Example::

        >>> builder = ms.builder.LocalBuilder(timeout_sec=60)
        >>> results = builder.build([ms.builder.BuilderInput(sch.mod, Target("llvm"))])
        >>> results[0].artifact_path        # '/tmp/tmpab12/5f3c....so'
        >>> tw.runtime.load(Artifact.load(results[0].artifact_path))["main"](a, b, c)
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout_sec: float = 30.0,
        artifact_dir: str | None = None,
        f_build: BuildFunc | None = None,
    ) -> None:
        if timeout_sec <= 0:
            raise ValueError(f"LocalBuilder: timeout_sec must be positive, got {timeout_sec}")
        self.max_workers = max_workers or os.cpu_count() or 1
        self.timeout_sec = timeout_sec
        self.artifact_dir = artifact_dir or tempfile.mkdtemp(prefix="tilewright-builds-")
        if artifact_dir is None:
            # A directory of our own making goes with the builder.
            weakref.finalize(self, shutil.rmtree, self.artifact_dir, ignore_errors=True)
        self.f_build = f_build
        self._pool = WorkerPool(self.max_workers, what="builder")

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        """Build each input; one result per input, in order (never raises for a bad one)."""
        if not build_inputs:
            return []
        os.makedirs(self.artifact_dir, exist_ok=True)
        work = [(self.f_build, b.mod, b.target, self.artifact_dir) for b in build_inputs]
        outcomes = self._pool.map(build_and_save, work, self.timeout_sec)
        return [
            BuilderResult(artifact_path=o.value)
            if o.error is None
            else BuilderResult(error_msg=o.error)
            for o in outcomes
        ]

    def close(self) -> None:
        """Stop the worker processes (a later ``build`` starts new ones)."""
        self._pool.close()
