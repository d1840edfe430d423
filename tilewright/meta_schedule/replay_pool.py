"""Candidates replayed in worker processes: the search's costly step, run on every core.

A job is ``(kind, trace, seed)``: ``"fresh"`` replays a design-space trace with new
decisions, ``"replay"`` replays a trace as it is, ``"mutate"`` lets one of the context's
mutators (picked by ``mutator_probs``) change a decision of the trace, then replays it.
Each job ends with the postprocessors and gives back either the finished ``Schedule`` or
the reason it was rejected (``"replay"``, ``"mutator"``, a postprocessor's name). Workers
receive the ``TuneContext`` once; schedules travel back pickled.

Example::

    pool = ReplayPool(ctx, processes=16)
    out = pool.run([("fresh", spaces[0].trace, seed) for seed in range(64)])
    candidates = [s for s in out if not isinstance(s, str)]
    pool.close()
"""

from __future__ import annotations

import hashlib
import pickle
import random
from typing import TYPE_CHECKING, Literal

from tilewright.meta_schedule.builder.process_pool import WorkerPool
from tilewright.meta_schedule.candidates import fresh_decisions, replay_candidate
from tilewright.meta_schedule.mutator.replay import design_space
from tilewright.schedule import Schedule, Trace

if TYPE_CHECKING:
    from tilewright.meta_schedule.tune_context import TuneContext

JobKind = Literal["fresh", "replay", "mutate"]
Job = tuple[JobKind, Trace, int]

# Contexts a worker has unpickled, by the digest of their bytes.
_CONTEXTS: dict[str, TuneContext] = {}
# A job that takes longer than this (lowering a huge unrolled candidate) is dropped.
JOB_TIMEOUT_SEC = 300.0


def run_job(context: TuneContext, job: Job) -> Schedule | str:
    """One job in this process (see the module docstring)."""
    kind, trace, seed = job
    assert context.mod is not None
    rng = random.Random(seed)
    provider = None
    if kind == "fresh":
        provider = fresh_decisions(context, random.Random(rng.randrange(2**31)))
    elif kind == "mutate":
        mutators = [(m, p) for m, p in context.space_generator.mutator_probs.items() if p > 0]
        if not mutators:
            return "mutator"
        mutator = rng.choices([m for m, _ in mutators], [p for _, p in mutators])[0]
        mutated = mutator.apply(design_space(trace), rng)
        if mutated is None:
            return "mutator"
        trace = mutated
    elif kind != "replay":
        raise ValueError(f"unknown replay job kind {kind!r}")
    sch = Schedule(context.mod, seed=rng.randrange(1, 2**31 - 1))
    reason = replay_candidate(context, trace, sch, provider)
    return sch if reason is None else reason


def _work(key: str, context_bytes: bytes, jobs: list[Job]) -> bytes:
    context = _CONTEXTS.get(key)
    if context is None:
        context = _CONTEXTS[key] = pickle.loads(context_bytes)
    return pickle.dumps([run_job(context, job) for job in jobs])


class ReplayPool:
    """Runs replay jobs on ``processes`` workers (inline when 1); a job whose worker
    crashes or times out is rejected with that reason.

    Args:
        context: the task; pickled to the workers.
        processes: workers (default: the context's ``num_threads``).
    """

    def __init__(self, context: TuneContext, processes: int | None = None) -> None:
        self.context = context
        self.processes = max(1, processes or context.num_threads)
        self._pool: WorkerPool | None = None
        self._bytes = pickle.dumps(context)
        self._key = hashlib.sha1(self._bytes).hexdigest()

    def run(self, jobs: list[Job]) -> list[Schedule | str]:
        """Each job's finished schedule or rejection reason, in order."""
        if self.processes == 1 or len(jobs) <= 1:
            return [run_job(self.context, job) for job in jobs]
        if self._pool is None:
            self._pool = WorkerPool(self.processes, what="replay")
        # Small batches: one pipe round trip carries several jobs.
        size = max(1, min(8, len(jobs) // (2 * self.processes)))
        batches = [jobs[k : k + size] for k in range(0, len(jobs), size)]
        outcomes = self._pool.map(
            _work, [(self._key, self._bytes, b) for b in batches], JOB_TIMEOUT_SEC * size
        )
        results: list[Schedule | str] = []
        for batch, outcome in zip(batches, outcomes):
            if outcome.error is not None:
                results.extend([f"replay worker: {outcome.error.splitlines()[0]}"] * len(batch))
            else:
                results.extend(pickle.loads(outcome.value))
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __del__(self) -> None:
        self.close()
