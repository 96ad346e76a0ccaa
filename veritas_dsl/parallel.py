"""Queries solved across processes (``--jobs N``), for batches of rows.

Each worker rebuilds the parent's list of lowered queries once (with a picklable function the
caller gives, which loads the spec and lowers it the same way), so a task is only an index; back
come the engines' Results and the checks, which the parent joins to its own lowered queries.
Workers are spawned, not forked: the engines' native libraries hold threads.

Ctrl-C reaches every process of the terminal's group. Workers are born ignoring it, so that one
starting up or waiting for a task stays quiet, and listen to it only while they solve: the
engine then stops with its bounds so far. The parent also passes an interrupt on to the workers
(a notebook interrupts only the parent) and tells the tasks still queued to skip.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed

from veritas_dsl.lang.lower import Lowered
from veritas_dsl.outcome import Interrupted, QueryRun
from veritas_dsl.run import RunOptions, run_lowered

#: Processes pay off only when the queries left would take longer than this in one process:
#: each worker spends seconds importing, loading the spec and the compiled engines.
_WORTH_IT_S = 10.0

_worker_lowered: list[Lowered] = []
_worker_stop = None


def default_jobs() -> int:
    return os.cpu_count() or 1


def _start_worker(rebuild: Callable[[], list[Lowered]], stop, pids) -> None:
    global _worker_lowered, _worker_stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # in case it was not ignored from birth
    pids.put(os.getpid())
    _worker_stop = stop
    _worker_lowered = rebuild()


def _interrupt_once(signum, frame) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent may pass the same Ctrl-C on
    raise KeyboardInterrupt


def _solve_task(index: int, options: RunOptions):
    """The results and checks of one query, or None when the run was stopped before it began."""
    signal.signal(signal.SIGINT, _interrupt_once)
    try:
        if _worker_stop.is_set():  # after arming: a stop set later comes with a signal
            return None
        run = run_lowered(_worker_lowered[index], options)
        return run.results, run.checks
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_all(
    lowered: list[Lowered],
    options: RunOptions,
    jobs: int,
    rebuild: Callable[[], list[Lowered]],
    done: Callable[[QueryRun, int, int], None] | None = None,
    worth_it_s: float = _WORTH_IT_S,
) -> list[QueryRun]:
    """Run every lowered query, in order; on ``jobs`` processes when that pays off.

    ``rebuild`` gives, in a worker process, the same list of lowered queries; it must pickle
    (a module-level function, or a ``functools.partial`` of one). ``done(run, finished, total)``
    is called as runs complete.

    Ctrl-C stops the run: raises :class:`~veritas_dsl.outcome.Interrupted` whose ``partial`` holds
    the runs finished so far, in order, the interrupted ones (with their bounds so far) included.
    """
    total = len(lowered)
    runs: list[QueryRun | None] = [None] * total
    finished = 0

    def record(index: int, run: QueryRun) -> None:
        nonlocal finished
        runs[index] = run
        finished += 1
        if done:
            done(run, finished, total)
        if run.interrupted:
            raise Interrupted([])  # the partial list is made below, once

    try:
        # Queries run here one by one until those left look long enough to share. The first is
        # not timed: it pays for compiling the engines.
        next_index = 0
        timed_start = 0.0
        while next_index < total:
            if next_index == 1:
                timed_start = time.monotonic()
            if jobs > 1 and next_index >= 2:
                per_query = (time.monotonic() - timed_start) / (next_index - 1)
                if per_query * (total - next_index) > worth_it_s:
                    break
            record(next_index, run_lowered(lowered[next_index], options))
            next_index += 1
        if next_index < total:
            _run_pool(lowered, options, jobs, rebuild, next_index, record, runs)
    except KeyboardInterrupt:
        raise Interrupted([run for run in runs if run is not None]) from None
    return runs


def _run_pool(lowered, options, jobs, rebuild, first, record, runs) -> None:
    """Run queries ``first`` onwards on ``jobs - 1`` workers and this process."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    pids = context.SimpleQueue()
    plain = RunOptions(options.solver, options.timeout_s)  # callbacks stay in this process
    pool = ProcessPoolExecutor(
        jobs - 1, mp_context=context, initializer=_start_worker, initargs=(rebuild, stop, pids)
    )
    futures: dict[Future, int] = {}
    try:
        with _sigint_ignored():  # workers are spawned while submitting, and inherit it
            futures = {pool.submit(_solve_task, i, plain): i for i in range(first, len(lowered))}
        # This process is one of the jobs: it takes queries from the back while the workers
        # start and take them from the front, until they meet.
        for future, i in reversed(list(futures.items())):
            if not future.cancel():
                break
            record(i, run_lowered(lowered[i], options))
        for future in as_completed([f for f in futures if not f.cancelled()]):
            i = futures[future]
            results, checks = future.result()
            record(i, QueryRun(lowered[i], results, checks))
    except KeyboardInterrupt:
        stop.set()
        _stop_workers(pool, pids)
        for future, i in futures.items():  # what the workers finished, or stopped with bounds
            finished = not future.cancelled() and future.exception() is None
            if runs[i] is None and finished and future.result() is not None:
                runs[i] = QueryRun(lowered[i], *future.result())
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _stop_workers(pool: ProcessPoolExecutor, pids) -> None:
    """Interrupt the workers' searches and wait for them; a second Ctrl-C ends them at once."""
    workers = []
    while not pids.empty():
        workers.append(pids.get())
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
    try:
        pool.shutdown(wait=True, cancel_futures=True)
    except KeyboardInterrupt:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        pool.shutdown(wait=True, cancel_futures=True)
        raise


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored meanwhile (only the main thread can set handlers; elsewhere, no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
