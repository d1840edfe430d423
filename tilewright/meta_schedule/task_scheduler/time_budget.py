"""A tuning session's wall-time budget: how many candidates the next round may measure so
that it ends inside ``max_seconds``, when the candidates still running must stop, and by how
much the session ended past it.

A round costs a part that does not grow with its size (the search, re-timing the leaders,
the callbacks) and a part per candidate (its build and its run). Both are estimated from the
last rounds, taking the largest of them: one slow round should shrink the next, not be
averaged away. Before the first round there is nothing to go by, so it is not shrunk; its
runs still stop at the deadline.

Example::

    budget = TimeBudget(300.0)
    n = budget.fits(64)            # 64 before any round; later what the estimates allow
    ...                            # search, build, run n candidates
    budget.record(n, fixed_secs=4.0, measure_secs=40.0)
    budget.summary()               # 'time budget 300 s: ended after 296.1 s (3.9 s to spare)'
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# Rounds whose costs make the estimates: recent enough to follow a search that has moved on
# to slower (or faster) candidates.
HISTORY = 3
# Seconds kept back for closing the session (the log's table and tuning curve).
CLOSING_SECS = 2.0


@dataclass
class TimeBudget:
    """The budget of one session; ``seconds=None`` is no budget (every method says so).
    ``clock`` gives the time in seconds (``time.perf_counter``; tests pass their own)."""

    seconds: float | None
    clock: Callable[[], float] = time.perf_counter
    start: float = math.nan
    per_candidate: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    fixed: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    stopped: str | None = None  # why no further round started, when that was the budget

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"max_seconds must be positive, not {self.seconds}")
        if math.isnan(self.start):
            self.start = self.clock()

    def now(self) -> float:
        return self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining(self) -> float:
        """Seconds left before the deadline (infinite without a budget; may be negative)."""
        if self.seconds is None:
            return math.inf
        return self.seconds - CLOSING_SECS - self.elapsed()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def fits(self, wanted: int) -> int:
        """How many of ``wanted`` candidates the next round may take (0: none; the reason
        is in ``stopped``)."""
        left = self.remaining()
        if math.isinf(left):
            return wanted
        if left <= 0:
            self.stopped = f"the {self.seconds:g} s budget is spent"
            return 0
        if not self.per_candidate:
            return wanted
        fixed, each = max(self.fixed), max(self.per_candidate)
        count = min(wanted, int((left - fixed) // each)) if each > 0 else wanted
        if count < 1:
            self.stopped = (
                f"{left:.1f} s of the {self.seconds:g} s budget left; a round takes about "
                f"{fixed:.1f} s plus {each:.1f} s a candidate"
            )
            return 0
        return count

    def record(self, candidates: int, fixed_secs: float, measure_secs: float) -> None:
        """A finished round: its size-independent seconds and those of its builds and runs."""
        self.fixed.append(fixed_secs)
        if candidates > 0:
            self.per_candidate.append(measure_secs / candidates)

    def overrun(self) -> float:
        """Seconds past the budget so far (0 when inside it or without one)."""
        if self.seconds is None:
            return 0.0
        return max(0.0, self.elapsed() - self.seconds)

    def summary(self) -> str | None:
        """One line on how the session ended against its budget (None without one)."""
        if self.seconds is None:
            return None
        elapsed, over = self.elapsed(), self.overrun()
        line = f"time budget {self.seconds:g} s: ended after {elapsed:.1f} s"
        if over > 0:
            return line + f", {over:.1f} s over (the last round ran past the deadline)"
        return line + f" ({self.seconds - elapsed:.1f} s to spare)"
