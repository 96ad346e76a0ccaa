"""What a run of the anytime loop (:mod:`.anytime`) reports: its progress while it runs, its
outcome when it stops, and the error a bug in the engine raises."""

from __future__ import annotations

from dataclasses import dataclass, field

from veritas_dsl.result import Termination, TracePoint, Witness
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.search import state_bytes


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
    goal's own sense, and statistics; with N solutions asked, the best distinct ones found,
    best first, and how many of them, from the first, are proven (:mod:`.nbest`)."""

    termination: Termination
    witness: Witness | None = None
    trace: list[TracePoint] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    lower: float | None = None
    upper: float | None = None
    solutions: list[Witness] | None = None
    proven: int | None = None


def run_stats(run, expanded: int, now: float) -> dict:
    """The statistics of the loop ``run`` (an :class:`.anytime.Run`) stopped ``now`` seconds in,
    having expanded ``expanded`` states."""
    searches = [s for s in run.searches if s is not None]
    stats = {
        "states_expanded": expanded,
        "states_created": sum(int(s.ctx[K.C_PUSHED]) for s in searches) + run.retired["created"],
        "states_pruned": sum(int(s.ctx[K.C_PRUNED]) for s in searches) + run.retired["pruned"],
        "states_per_s": expanded / now if now > 0 else 0.0,
        "bytes_per_state": max(
            (state_bytes(p) for p in run.problems if not p.infeasible), default=0
        ),
        "peak_open_states": max([s.live_peak for s in searches] + [run.retired["peak"]]),
        "peak_memory_bytes": max(run.peak_memory, run.memory()),
        "branches": len(run.problems),
        "search_trees": sum(p.n_trees for p in run.problems),
        "solutions_accepted": run.accepted,
        "solutions_rejected": run.rejected,
        "kernel_calls": run.calls,
        "exact_units": int(all(p.exact_units for p in run.problems)),
    }
    for b, search in enumerate(run.searches):
        if search is not None:
            run.note_switched(b, search)
    if run.switched:  # the output constraints switched on, of those the searches began without
        on, lazy = (sum(n) for n in zip(*run.switched.values(), strict=True))
        stats["lazy_constraints"] = f"{on}/{lazy}"
    return stats
