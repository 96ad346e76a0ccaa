"""What a run of the anytime loop (:mod:`.anytime`) reports: its progress while it runs, its
outcome when it stops, and the error a bug in the engine raises."""

from __future__ import annotations

from dataclasses import dataclass, field

from veritas_dsl.result import Termination, TracePoint, Witness


@dataclass(frozen=True)
class Progress:
    """What the progress hook receives: bounds in the goal's own sense (None for find and
    prove), states expanded so far, and the engine's memory."""

    time_s: float
    lower: float | None
    upper: float | None
    expanded: int
    states_per_s: float
    memory_bytes: int


class InternalError(AssertionError):
    """A state the kernels proved feasible has no valid point: a bug in the engine."""


@dataclass
class Outcome:
    """What the loop found: why it stopped, the best witness, the trace and the bounds in the
    goal's own sense, and statistics."""

    termination: Termination
    witness: Witness | None = None
    trace: list[TracePoint] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    lower: float | None = None
    upper: float | None = None
