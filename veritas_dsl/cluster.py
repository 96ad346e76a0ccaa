"""Row tasks on a Dask cluster (``--scheduler ADDRESS`` or ``--scheduler local:N``): the
:class:`~veritas_dsl.parallel.Pool` that :func:`veritas_dsl.parallel.run_all` hands a batch to.

What workers receive: the run's lowered queries, once per run as one Dask task that unpickles
them (plain data, the models' arrays included, not their library models:
:class:`~veritas_dsl.ir.lowered.Lowered`), and with each row task its index and its
:class:`~veritas_dsl.run.Plan` (the engines, chosen and checked once on the client). Workers need
no model or data file and no model library, and validate nothing: the client validates every
witness on its library models when the answer comes back (:func:`veritas_dsl.parallel.run_all`).
The queries travel as a task's argument rather than as scattered data: scattered data has no
recipe, so when every worker that held it dies (a row that crashes them all), Dask forgets it
and the tasks that needed it never end; a task's result Dask computes again.

Dask reruns the tasks of a worker that dies (up to its ``allowed-failures``); a task that raises
is not retried (``retries=0``) and its row is reported once as an ``error`` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

from veritas_dsl.errors import UserError
from veritas_dsl.ir.lowered import Lowered
from veritas_dsl.local_cluster import ANNOUNCE, parse_address
from veritas_dsl.parallel import Pool, sigint_deferred, sigint_held
from veritas_dsl.run import Plan, RunOptions, run_lowered

#: How long to try to reach a scheduler before saying it cannot be reached.
CONNECT_TIMEOUT_S = 10.0
#: How long a local cluster may take to start (2 workers: 3-30 s, the most on a loaded machine).
START_TIMEOUT_S = 120.0
#: How long a local cluster may take to close before its processes are killed.
CLOSE_TIMEOUT_S = 30.0


class SchedulerError(UserError):
    """The scheduler cannot be reached, or the local cluster does not start."""


def _unpickled(data: bytes) -> list[Lowered]:
    return pickle.loads(data)


def _solve_on_worker(lowered: list[Lowered], index: int, options: RunOptions, plan: Plan):
    run = run_lowered(lowered[index], options, plan, validate=False)
    return run.results, run.checks


class Connection:
    """A client of the Dask scheduler at ``address``, or of a new local cluster of N worker
    processes (one thread each, :mod:`veritas_dsl.local_cluster`) for ``local:N``; one serves
    every run of a command (``ver check`` of many files starts one cluster). Raises
    :class:`SchedulerError` when no scheduler answers at ``address`` within
    :data:`CONNECT_TIMEOUT_S`, or the local cluster does not start; KeyboardInterrupt, with
    nothing left running, on Ctrl-C meanwhile."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            needs = '--scheduler needs Dask: pip install "veritas-dsl[dask]"'
            raise SchedulerError(needs) from None
        self.host: _LocalHost | None = None
        self.client = None
        workers = parse_address(address)
        if workers is not None:
            self.host = _LocalHost(workers)
        else:
            _check_scheduler(address)
        failed = None
        # Dask's client, started in this thread, is not safe to interrupt (its locks): a
        # Ctrl-C waits for it, a second or so, then closes it.
        with sigint_held() as interrupted:
            try:
                where = self.host.address if self.host else address
                self.client = Client(where, timeout=CONNECT_TIMEOUT_S)
            except Exception as error:  # whatever answers there, it is not usable
                failed = error
        if interrupted or failed:
            self.close()
        if interrupted:
            raise KeyboardInterrupt
        if failed is not None:
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} "
                f"within {CONNECT_TIMEOUT_S:g} s: {type(failed).__name__}: {failed}"
            )

    def close(self) -> None:
        """Close the client, then the local cluster. A Ctrl-C meanwhile is dropped: the command
        is ending."""
        with sigint_held():
            try:
                if self.client is not None:
                    self.client.close()
            finally:
                if self.host is not None:
                    self.host.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _LocalHost:
    """The process of a local cluster (:mod:`veritas_dsl.local_cluster`), in a session of its
    own, and its scheduler's ``address``. Raises :class:`SchedulerError` when it does not start
    within :data:`START_TIMEOUT_S`; on that or a Ctrl-C meanwhile, it is killed first."""

    def __init__(self, workers: int) -> None:
        with sigint_deferred():  # a process started is one known here, to be stopped
            self.process = subprocess.Popen(
                [sys.executable, "-m", "veritas_dsl.local_cluster", str(workers)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        try:
            self.address = self._announced()
        except BaseException:
            self.kill()
            raise

    def _announced(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        output = self.process.stdout.fileno()
        seen = b""
        while select.select([output], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(output, 4096)
            if not chunk:
                code = self.process.wait()
                raise SchedulerError(f"the local Dask cluster ended as it started (exit {code})")
            seen += chunk
            *lines, _ = seen.split(b"\n")  # whole lines only
            for line in lines:
                if line.startswith(ANNOUNCE.encode()):
                    return line.removeprefix(ANNOUNCE.encode()).decode().strip()
        raise SchedulerError(f"the local Dask cluster did not start within {START_TIMEOUT_S:g} s")

    def close(self) -> None:
        """Close its input, so that it closes the cluster and ends; killed if it takes longer
        than :data:`CLOSE_TIMEOUT_S`."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(CLOSE_TIMEOUT_S)
        self.kill()

    def kill(self) -> None:
        """Kill its process group (it and its workers), what is left of it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process.stdout.close()


def _check_scheduler(address: str) -> None:
    """Raise :class:`SchedulerError` unless a Dask scheduler answers at ``address`` within
    :data:`CONNECT_TIMEOUT_S`, all told. ``Client`` bounds each step of connecting but not its
    handshake: a server that accepts and stays silent held a run for minutes, and one that is
    not Dask gave a ``MemoryError`` (its bytes read as a frame's length) after 17 s. The check
    runs on its own event loop and thread, so that it works where a loop runs already (a
    notebook) and a Ctrl-C meanwhile is not held up."""
    from distributed.comm import connect, get_address_host_port

    try:
        get_address_host_port(address)  # a known scheme (tcp://, tls:// ...), a host and a port
    except ValueError as error:
        raise SchedulerError(f"{address} is not the address of a Dask scheduler: {error}") from None

    async def identity():
        comm = await connect(address, timeout=0.8 * CONNECT_TIMEOUT_S)  # its reason, if it can
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    answer: dict = {}

    def ask() -> None:
        try:
            answer["identity"] = asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT_S))
        except Exception as error:  # reported below, whatever it is
            answer["error"] = error

    asking = threading.Thread(target=ask, name="veritas-dsl scheduler check", daemon=True)
    asking.start()
    asking.join(CONNECT_TIMEOUT_S + 1.0)
    error = answer.get("error")
    within = f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT_S:g} s"
    if "identity" not in answer and (error is None or isinstance(error, (OSError, TimeoutError))):
        reason = "no answer" if error is None or not str(error) else str(error)
        raise SchedulerError(f"{within}: {reason}")
    if error is not None:
        raise SchedulerError(
            f"{address} answers, but not as a Dask scheduler ({type(error).__name__} on reading "
            "its answer)"
        )
    kind = answer["identity"].get("type") if isinstance(answer["identity"], dict) else None
    if kind != "Scheduler":
        raise SchedulerError(f"{address} answers, but as a Dask {kind}, not as a scheduler")


@contextlib.contextmanager
def connected(scheduler: str | Connection | None) -> Iterator[Connection | None]:
    """``scheduler`` itself when connected already (its owner closes it) or None (no cluster),
    else a connection to it for the block."""
    if scheduler is None or isinstance(scheduler, Connection):
        yield scheduler
        return
    with Connection(scheduler) as connection:
        yield connection


class DaskPool(Pool):
    """Row tasks on a connected Dask cluster, each on the run's ``lowered`` queries.

    Answers come back through :func:`_pass_on`, not Dask's ``ClientExecutor``: that cancels
    every task on shutdown, finished ones too, and Dask then logged a ``FutureCancelledError``
    traceback for each answer still on its way when a Ctrl-C came."""

    def __init__(
        self, connection: Connection, options: RunOptions, lowered: list[Lowered]
    ) -> None:
        self.client = connection.client
        self.options = options
        # Pickled here, once: Dask would otherwise walk the list looking for its own futures.
        data = pickle.dumps(lowered, protocol=pickle.HIGHEST_PROTOCOL)
        self.queries = self.client.submit(_unpickled, data, pure=False)
        self.tasks: dict[Future, object] = {}

    def submit(self, index: int, plan: Plan) -> Future:
        task = self.client.submit(
            _solve_on_worker, self.queries, index, self.options, plan, retries=0, pure=False
        )
        answer = Future()
        self.tasks[answer] = task
        self.client.loop.add_callback(_pass_on, task, answer)
        return answer

    def stop(self) -> None:
        """Cancel the tasks not finished; the answers of the others still come back."""
        with sigint_held():  # Dask's client is not safe to interrupt; the run is stopping
            unfinished = [task for answer, task in self.tasks.items() if not answer.done()]
            if unfinished:
                self.client.cancel(unfinished)

    def close(self) -> None:
        self.stop()
        with sigint_held():
            self.queries.release()


async def _pass_on(task, answer: Future) -> None:
    """On the client's event loop: ``task``'s result into ``answer``, or what it raised (a
    cancellation included), then the task released, so the cluster forgets its result."""
    try:
        result = await task
    except BaseException as error:  # the answer carries it, whatever it is
        answer.set_exception(error)
    else:
        answer.set_result(result)
    finally:
        task.release()
