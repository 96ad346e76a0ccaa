"""``python -m veritas_dsl.local_cluster N``: a Dask ``LocalCluster`` of N worker processes (one
thread each) that lives until its standard input closes; :mod:`veritas_dsl.cluster` starts it
for ``--scheduler local:N`` and reads the scheduler's address from its first line of output.

It runs in a session of its own, its workers with it: a terminal's Ctrl-C reaches ``ver`` and
not them, and ``ver`` closes the cluster. In ``ver``'s process group, every worker printed its
own KeyboardInterrupt, and a scheduler in ``ver``'s process swallowed some Ctrl-Cs (Python
drops an exception raised in a gc callback, and Dask's scheduler installs one). When ``ver``
dies, even by SIGKILL, the input closes and the cluster goes with it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

#: What the line that gives the scheduler's address starts with.
ANNOUNCE = "veritas-dsl local cluster at "


def parse_address(address: str) -> int | None:
    """The number of workers of ``local:N``; None for a scheduler's address. Raises ValueError
    for ``local:`` without a positive number."""
    if not address.startswith("local:"):
        return None
    count = address.removeprefix("local:")
    if not count.isdigit() or int(count) < 1:
        raise ValueError(f"{address!r}: local:N needs a number of workers N >= 1")
    return int(count)


def address_in(scheduler_file: str, wait_s: float = 10.0) -> str:
    """The address a Dask scheduler wrote in its ``--scheduler-file`` (a JSON object with an
    ``address``). A batch job may start ``ver`` before its scheduler has written the file, so
    the file is awaited for ``wait_s`` seconds, as Dask's own client does. Raises ValueError
    when it does not appear, or holds no address."""
    path = Path(scheduler_file)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            address = json.loads(path.read_text(encoding="utf-8")).get("address")
        except FileNotFoundError:
            problem = f"no file {scheduler_file} after {wait_s:g} s (has the scheduler started?)"
        except (OSError, UnicodeDecodeError, ValueError, AttributeError, RecursionError) as error:
            # ValueError: not JSON yet (being written) or at all; AttributeError: not an object;
            # RecursionError: arrays nested too deep for json.
            problem = f"{scheduler_file} is not a Dask scheduler file ({error})"
        else:
            if isinstance(address, str) and (
                address.startswith("local:") or not address.isprintable() or " " in address
            ):
                # local:N is ver's own shorthand, never a scheduler's: it would start workers
                # here; a line break or an escape would be printed as it is in messages
                raise ValueError(
                    f"{address!r} in {scheduler_file} is not a Dask scheduler's address"
                )
            if isinstance(address, str) and address:
                return address
            problem = f"{scheduler_file} is not a Dask scheduler file (no address in it)"
        if time.monotonic() >= deadline:
            raise ValueError(problem)
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    from distributed import LocalCluster

    (workers,) = sys.argv[1:] if argv is None else argv
    with LocalCluster(
        n_workers=int(workers),
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        # Dask's scheduler serves HTTP even without its dashboard, on port 8787 unless told:
        # a free port on this machine (8787 in use printed "Port 8787 is already in use").
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        # Workers fetch the run's queries from each other (veritas_dsl.cluster); a Ctrl-C that
        # closes the cluster mid-fetch made a worker log the broken transfer as an ERROR with
        # its traceback, and the scheduler a CRITICAL "Closed comm" with another when ver had
        # gone. ver reports every task's failure itself (an `error` row), so the cluster's own
        # logs say nothing a user needs: none is printed, CRITICAL included.
        silence_logs=logging.CRITICAL + 1,
    ) as cluster:
        print(ANNOUNCE + cluster.scheduler_address, flush=True)
        sys.stdin.read()  # until ver closes it, or dies
    return 0


if __name__ == "__main__":
    sys.exit(main())
