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
    check`` of many files starts one cluster). Raises :class:`SchedulerError` when the
    scheduler cannot be reached within :data:`CONNECT_TIMEOUT_S`."""

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
        try:
            self.client = Client(self.cluster or address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as error:
            self._close_cluster()
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} "
                f"within {CONNECT_TIMEOUT_S:g} s: {error}"
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
