"""Ctrl-C while a solver's own code runs: the solver works in a thread, Ctrl-C asks it to stop.

A solver library called from Python's main thread either never sees Ctrl-C until it returns, or
handles SIGINT itself in ways an engine cannot recover from (PySAT jumps out of CaDiCaL with
``longjmp``, after which closing the solver aborts the process). So the call runs in a worker
thread while the main thread waits, and SIGINT only calls ``on_interrupt``, which must make the
solver return soon (a flag its callbacks read). The engine then reports ``interrupted``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How often the waiting thread wakes, so that Ctrl-C is seen even when SIGINT reached another.
WAIT_SECONDS = 0.1


def run_interruptible(work: Callable[[], T], on_interrupt: Callable[[], None]) -> T:
    """``work()`` in a worker thread; Ctrl-C meanwhile calls ``on_interrupt`` instead of raising.

    While ``work`` runs, SIGINT gets a handler that calls ``on_interrupt`` when the handler it
    replaces is Python's own (which would raise ``KeyboardInterrupt`` anywhere, even where the
    waiting loop could not catch it); a ``KeyboardInterrupt`` from another handler is caught
    while waiting. Either way this returns (or raises) only once ``work`` has finished, so its
    solver is never used or closed while it runs.
    """
    outcome: list[tuple[bool, object]] = []

    def target() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as error:  # handed to the caller
            outcome.append((False, error))

    thread = threading.Thread(target=target, daemon=True)
    previous = None
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, lambda _signum, _frame: on_interrupt())
    try:
        thread.start()
        while thread.is_alive():
            try:
                thread.join(WAIT_SECONDS)
            except KeyboardInterrupt:
                on_interrupt()
    finally:
        if thread.is_alive():  # something else left the loop: stop the solver first
            on_interrupt()
            thread.join()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    done, value = outcome[0]
    if not done:
        raise value
    return value
