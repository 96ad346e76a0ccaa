"""Queries solved across processes (``--jobs N``) or on a Dask cluster (``--scheduler``), for
batches of rows: one loop hands row tasks to a :class:`Pool` and joins their answers.

Each worker receives the parent's list of lowered queries once, when it starts (plain data, the
models' arrays without their library models: :class:`~veritas_dsl.ir.lowered.Lowered`), so a
task is an index and the query's :class:`~veritas_dsl.run.Plan` (its engines, chosen and checked
once, before anything ran); back come the engines' Results and the checks, which the parent
joins to its own lowered queries after validating every witness on its library models (a
worker has none: they do not pickle, and a worker needs neither the model files nor the
libraries' code). Workers do not validate: the library model is the truth, and only the parent
has it.
Workers are spawned, not forked: the engines' native libraries hold threads.

Ctrl-C reaches every process of the terminal's group. Workers are born ignoring it, so that one
starting up or waiting for a task stays quiet, and listen to it only while they solve: the
engine then stops with its bounds so far. The parent also passes an interrupt on to the workers
(a notebook interrupts only the parent) and tells the tasks still queued to skip; a worker that
a Ctrl-C stopped skips them too, without waiting to be told. The parent waits for answers in
short waits, and a Ctrl-C acts between them (see :func:`sigint_deferred`).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from veritas_dsl.errors import SoundnessError, UserError
from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.lowered import Lowered
from veritas_dsl.outcome import Interrupted, QueryRun
from veritas_dsl.result import Result, Termination
from veritas_dsl.run import Plan, RunOptions, judge, preflight, run_lowered, validated

#: Processes pay off only when the queries left would take longer than this in one process:
#: each worker spends seconds importing and loading the compiled engines.
_WORTH_IT_S = 10.0

#: How long a wait for workers' answers lasts at most, so that a Ctrl-C held meanwhile acts.
_WAIT_S = 0.1

#: prctl's option that names the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1

_worker_lowered: list[Lowered] = []
_worker_stop = None
_worker_interrupted = False


class Pool:
    """Where row tasks run: :meth:`submit` gives a future of ``(results, checks)`` (None for a
    task that a stop skipped). ``shares_work``: this process is one of the workers, and takes
    tasks from the back of the queue while the pool takes them from the front."""

    shares_work = False

    def submit(self, index: int, plan: Plan) -> Future:
        raise NotImplementedError

    def stop(self) -> None:
        """Ctrl-C: stop the workers' searches and the queued tasks."""

    def close(self) -> None:
        """Wait for the workers and release them."""


def default_jobs() -> int:
    return os.cpu_count() or 1


def _start_worker(lowered: list[Lowered], stop, pids, parent: int) -> None:
    global _worker_lowered, _worker_stop
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # in case it was not ignored from birth
    pids.put(os.getpid())
    _worker_stop = stop
    _worker_lowered = lowered


def _die_with(parent: int) -> None:
    """On Linux, have the kernel SIGKILL this worker when ``parent`` dies, however it dies: a
    ``ver`` killed by SIGKILL left its workers running (and, as they hold its pipe,
    multiprocessing's resource tracker) for good. The kernel acts even while a compiled engine
    holds the GIL, which a thread watching the parent's pipe would wait for. The signal comes
    when the parent's thread that spawned this worker ends: ``run_all``'s, which closes the pool
    before it returns."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def _interrupt_once(signum, frame) -> None:
    global _worker_interrupted
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent may pass the same Ctrl-C on
    _worker_interrupted = True  # the run is stopping: tasks still queued here are skipped
    raise KeyboardInterrupt


def _solve_task(index: int, options: RunOptions, plan: Plan):
    """The results and checks of one query, or None when the run was stopped before it began."""
    signal.signal(signal.SIGINT, _interrupt_once)
    try:
        # After arming: a stop set later comes with a signal. The flag first: a worker that a
        # Ctrl-C stopped took its next task before the parent's stop came (a row more ran).
        if _worker_interrupted or _worker_stop.is_set():
            return None
        run = run_lowered(_worker_lowered[index], options, plan, validate=False)
        return run.results, run.checks
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_all(
    lowered: list[Lowered],
    options: RunOptions,
    jobs: int,
    done: Callable[[QueryRun, int, int], None] | None = None,
    worth_it_s: float = _WORTH_IT_S,
    pool: Callable[[list[Lowered]], Pool] | None = None,
    plans: list[Plan] | None = None,
) -> list[QueryRun]:
    """Run every lowered query, in order; on ``jobs`` processes when that pays off, or every one
    on the pool that ``pool()`` makes (a Dask cluster, :mod:`veritas_dsl.cluster`).

    ``done(run, finished, total)`` is called as runs complete. ``pool(lowered)`` gets the list
    of lowered queries to hand its workers. ``plans``: those :func:`~veritas_dsl.run.preflight`
    made, one per lowered query (made here when not given).

    A task that raises (not a user's error, nor a soundness one, which stop the run) gives its
    row an ``error`` Result naming the exception, once; the other rows still run.

    Ctrl-C stops the run: raises :class:`~veritas_dsl.outcome.Interrupted` whose ``partial`` holds
    the runs finished so far, in order, the interrupted ones (with their bounds so far) included.
    """
    total = len(lowered)
    plans = preflight(lowered, options) if plans is None else plans
    runs: list[QueryRun | None] = [None] * total
    finished = 0

    def keep(index: int, run: QueryRun) -> None:
        nonlocal finished
        with sigint_deferred():  # a run reported finished is one written whole (``done``)
            runs[index] = run
            finished += 1
            if done:
                done(run, finished, total)

    def record(index: int, run: QueryRun) -> None:
        keep(index, run)
        if run.interrupted:
            raise Interrupted([])  # the partial list is made below, once

    try:
        next_index = 0
        if pool is None:
            next_index = _run_here(lowered, plans, options, jobs, worth_it_s, record)
        if next_index < total:
            plain = RunOptions(options.solver, options.timeout_s)  # callbacks stay here
            chosen = pool(lowered) if pool else _ProcessPool(jobs - 1, lowered, plain)
            _run_pool(chosen, lowered, plans, next_index, record, keep, options)
    except KeyboardInterrupt:
        raise Interrupted([run for run in runs if run is not None]) from None
    return runs


def _run_here(lowered, plans, options, jobs, worth_it_s, record) -> int:
    """Run queries here one by one until those left look long enough to share; the index of
    the first one left. The first is not timed: it pays for compiling the engines."""
    next_index = 0
    timed_start = 0.0
    while next_index < len(lowered):
        if next_index == 1:
            timed_start = time.monotonic()
        if jobs > 1 and next_index >= 2:
            per_query = (time.monotonic() - timed_start) / (next_index - 1)
            if per_query * (len(lowered) - next_index) > worth_it_s:
                break
        record(next_index, run_lowered(lowered[next_index], options, plans[next_index]))
        next_index += 1
    return next_index


def _run_pool(pool: Pool, lowered, plans, first, record, keep, options) -> None:
    """Run queries ``first`` onwards on ``pool`` (and this process, when it shares the work).
    After Ctrl-C, what the workers finished meanwhile is kept (and reported: a results file
    gets those rows too), without stopping at the first interrupted one."""
    futures: dict[Future, int] = {}
    recorded: set[int] = set()

    def record_once(index: int, run: QueryRun) -> None:
        recorded.add(index)
        record(index, run)

    try:
        with sigint_deferred():  # Dask's client is not safe to interrupt
            futures = {pool.submit(i, plans[i]): i for i in range(first, len(lowered))}
        if pool.shares_work:
            for future, i in reversed(list(futures.items())):
                if not future.cancel():
                    break
                record_once(i, run_lowered(lowered[i], options, plans[i]))
        waiting = {f for f in futures if not f.cancelled()}
        while waiting:
            # A Ctrl-C acts after a wait, never inside one: raised while wait() took its
            # futures' locks, it left one taken, and Dask's thread then hung on it for good.
            with sigint_deferred():
                finished, waiting = wait(waiting, _WAIT_S, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=futures.__getitem__):
                if future.exception() is None and future.result() is None:
                    raise KeyboardInterrupt  # a worker skipped it: a Ctrl-C reached the workers
                i = futures[future]
                record_once(i, _joined(lowered[i], future, plans[i]))
    except KeyboardInterrupt:
        pool.stop()
        for future, i in futures.items():  # what the workers finished, or stopped with bounds
            finished = future.done() and not future.cancelled() and future.exception() is None
            if i not in recorded and finished and future.result() is not None:
                keep(i, _joined(lowered[i], future, plans[i]))
        raise
    finally:
        pool.close()


def _joined(lowered: Lowered, future: Future, plan: Plan) -> QueryRun:
    """A worker's answer joined to this process's lowered query, its witnesses validated on the
    library models here; a task that raised is the row's ``error`` Result."""
    try:
        results, checks = future.result()
    except (UserError, SoundnessError, KeyboardInterrupt):
        raise
    except Exception as error:
        engine = plan.engine
        message = f"the task failed: {type(error).__name__}: {error}"
        result = Result(
            lowered.query.name,
            engine,
            Termination.ERROR,
            *trivial_bounds(lowered.query),
            message=message,
        )
        return QueryRun(lowered, [result], judge(lowered, result))
    results = [validated(lowered, result) for result in results]
    return QueryRun(lowered, results, checks)


class _ProcessPool(Pool):
    """``workers`` spawned processes on this machine, and this process (``--jobs N``)."""

    shares_work = True

    def __init__(self, workers: int, lowered: list[Lowered], options: RunOptions) -> None:
        context = multiprocessing.get_context("spawn")
        self.options = options
        self.stopped = context.Event()
        self.pids = context.SimpleQueue()
        self.executor = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(lowered, self.stopped, self.pids, os.getpid()),
        )

    def submit(self, index: int, plan: Plan) -> Future:
        with _sigint_ignored():  # workers are spawned while submitting, and inherit it
            return self.executor.submit(_solve_task, index, self.options, plan)

    def stop(self) -> None:
        """Interrupt the workers' searches and wait for them; a second Ctrl-C ends them."""
        self.stopped.set()
        workers = []
        while not self.pids.empty():
            workers.append(self.pids.get())
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        try:
            self.executor.shutdown(wait=True, cancel_futures=True)
        except KeyboardInterrupt:
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            self.executor.shutdown(wait=True, cancel_futures=True)
            raise

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def sigint_held():
    """A Ctrl-C meanwhile is held: the block yields a list that then holds it, if one came, and
    the caller decides what it does (main thread only, as :func:`_sigint_ignored`; none comes
    while Ctrl-C is ignored)."""
    caught: list = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)
    if previous == signal.SIG_IGN:
        caught.clear()


@contextlib.contextmanager
def sigint_deferred():
    """A Ctrl-C meanwhile acts at the end of the block instead of inside it."""
    previous = signal.getsignal(signal.SIGINT)
    with sigint_held() as caught:
        yield
    if caught and callable(previous):
        previous(signal.SIGINT, caught[0])
    elif caught:
        raise KeyboardInterrupt


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
