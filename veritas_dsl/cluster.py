"""Row tasks on a Dask cluster (``--scheduler ADDRESS`` or ``--scheduler local:N``): the
:class:`~veritas_dsl.parallel.Pool` that :func:`veritas_dsl.parallel.run_all` hands a batch to.

What workers receive: with each task, the spec's text and path (a few kilobytes) and the row's
index; a worker loads the models and data from their paths once per run and keeps the lowered
queries. The text travels with every task rather than being scattered once: scattered data has
no recipe, so when every worker that held it dies (a row that crashes them all), Dask forgets it
and the tasks that needed it never end. Models are loaded from paths, not scattered, because
an Ensemble holds its library model (a live XGBoost Booster or estimator, which validates every
witness) and that does not pickle; so the workers must read the spec's files at the same paths
(one machine, or a shared file system). A worker checks that the bytes it loaded hash to the
parent's digest, so a worker that sees other files fails the run instead of answering another
spec.

Dask reruns the tasks of a worker that dies (up to its ``allowed-failures``); a task that raises
is not retried (``retries=0``) and its row is reported once as an ``error`` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from veritas_dsl.errors import UserError
from veritas_dsl.lang.lower import Lowered
from veritas_dsl.parallel import Pool
from veritas_dsl.run import RunOptions, run_lowered

#: How long to try to reach a scheduler before saying it cannot be reached.
CONNECT_TIMEOUT_S = 10.0


class SchedulerError(UserError):
    """The scheduler cannot be reached, or the workers do not see the spec's files."""


@dataclass(frozen=True)
class Source:
    """What a worker rebuilds the lowered queries from: ``build()`` gives the parent's list and
    the digest of the files it loaded (:meth:`veritas_dsl.spec.Spec.digest`), which must be
    ``expected``."""

    token: str
    build: object
    expected: str


_built: dict[str, list[Lowered]] = {}
_building = threading.Lock()


def _lowered_on_worker(source: Source) -> list[Lowered]:
    with _building:
        if source.token not in _built:
            lowered, digest = source.build()
            if digest != source.expected:
                raise SchedulerError(
                    f"a Dask worker loaded other files than this run: the spec's models or "
                    f"data differ at its paths (digest {digest[:12]} instead of "
                    f"{source.expected[:12]})"
                )
            _built.clear()  # one run's queries at a time
            _built[source.token] = lowered
        return _built[source.token]


def _solve_on_worker(source: Source, index: int, options: RunOptions):
    run = run_lowered(_lowered_on_worker(source)[index], options)
    return run.results, run.checks


def parse_address(address: str) -> int | None:
    """The number of workers of ``local:N``; None for a scheduler's address. Raises ValueError
    for ``local:`` without a positive number."""
    if not address.startswith("local:"):
        return None
    count = address.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise ValueError(f"{address!r}: local:N needs a number of workers N >= 1")
    return int(count)


class Connection:
    """A client of the Dask scheduler at ``address``, or of a new ``LocalCluster`` of N worker
    processes (one thread each) for ``local:N``; one serves every run of a command (``ver
    check`` of many files starts one cluster). Raises :class:`SchedulerError` when no scheduler
    answers at ``address`` within :data:`CONNECT_TIMEOUT_S`."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            needs = '--scheduler needs Dask: pip install "veritas-dsl[dask]"'
            raise SchedulerError(needs) from None
        self.cluster = None
        workers = parse_address(address)
        if workers is not None:
            self.cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        else:
            _check_scheduler(address)
        try:
            self.client = Client(self.cluster or address, timeout=CONNECT_TIMEOUT_S)
        except Exception as error:  # whatever answers there, it is not usable
            self._close_cluster()
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} "
                f"within {CONNECT_TIMEOUT_S:g} s: {type(error).__name__}: {error}"
            ) from None

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self._close_cluster()

    def _close_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
        comm = await connect(address, timeout=CONNECT_TIMEOUT_S)
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
    """Row tasks on a connected Dask cluster; each carries the spec's source."""

    def __init__(self, connection: Connection, build, expected: str, options: RunOptions) -> None:
        self.client = connection.client
        self.options = options
        self.source = Source(uuid.uuid4().hex, build, expected)
        self.executor = self.client.get_executor(retries=0, pure=False)

    def submit(self, index: int) -> Future:
        return self.executor.submit(_solve_on_worker, self.source, index, self.options)

    def stop(self) -> None:
        self.executor.shutdown(wait=False)  # cancels every task not finished

    def close(self) -> None:
        self.executor.shutdown(wait=False)
