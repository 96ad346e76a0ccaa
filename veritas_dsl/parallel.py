"""Queries solved across processes (``--jobs N``), for batches of rows.

Each worker loads the spec once and lowers it the same way as the parent, so a task is only an
index; back come the engines' Results and the checks, which the parent joins to its own lowered
queries. Workers are spawned, not forked: the engines' native libraries hold threads.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed

from veritas_dsl.ir.lower import Lowered
from veritas_dsl.run import QueryRun, RunOptions, run_lowered

#: Processes pay off only when the queries left would take longer than this in one process:
#: each worker spends seconds importing, loading the spec and the compiled engines.
_WORTH_IT_S = 10.0

_worker_lowered: list[Lowered] = []


def default_jobs() -> int:
    return os.cpu_count() or 1


def _start_worker(text: str, path: str, trust_pickle: bool, checks_only: bool) -> None:
    from veritas_dsl.spec import parse

    global _worker_lowered
    _worker_lowered = list(parse(text, path, trust_pickle).lowered(checks_only))


def _solve_task(index: int, options: RunOptions):
    run = run_lowered(_worker_lowered[index], options)
    return run.results, run.checks


def run_all(
    lowered: list[Lowered],
    options: RunOptions,
    jobs: int,
    source: tuple[str, str, bool, bool],
    done: Callable[[QueryRun, int, int], None] | None = None,
    worth_it_s: float = _WORTH_IT_S,
) -> list[QueryRun]:
    """Run every lowered query, in order; on ``jobs`` processes when that pays off.

    ``source`` is ``(text, path, trust_pickle, checks_only)``, from which workers rebuild the same
    list of lowered queries. ``done(run, finished, total)`` is called as runs complete.
    """
    total = len(lowered)
    runs: list[QueryRun | None] = [None] * total
    # Queries run here one by one until those left look long enough to share. The first is not
    # timed: it pays for compiling the engines.
    next_index = 0
    timed_start = 0.0
    while next_index < total:
        if next_index == 1:
            timed_start = time.monotonic()
        if jobs > 1 and next_index >= 2:
            per_query = (time.monotonic() - timed_start) / (next_index - 1)
            if per_query * (total - next_index) > worth_it_s:
                break
        runs[next_index] = run_lowered(lowered[next_index], options)
        next_index += 1
        if done:
            done(runs[next_index - 1], next_index, total)
    if next_index == total:
        return runs
    context = multiprocessing.get_context("spawn")
    plain = RunOptions(options.solver, options.timeout_s)  # callbacks stay in this process
    finished = next_index
    with ProcessPoolExecutor(
        jobs - 1, mp_context=context, initializer=_start_worker, initargs=source
    ) as pool:
        # This process is one of the jobs: it takes queries from the back while the workers
        # start and take them from the front, until they meet.
        futures = {pool.submit(_solve_task, i, plain): i for i in range(next_index, total)}
        for future, i in reversed(list(futures.items())):
            if not future.cancel():
                break
            runs[i] = run_lowered(lowered[i], options)
            finished += 1
            if done:
                done(runs[i], finished, total)
        for future in as_completed([f for f in futures if not f.cancelled()]):
            i = futures[future]
            results, checks = future.result()
            runs[i] = QueryRun(lowered[i], results, checks)
            finished += 1
            if done:
                done(runs[i], finished, total)
    return runs
