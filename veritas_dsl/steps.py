"""Progress of the library's long work (fitting and editing DaRE forests, making a family of
deletions), reported to whoever listens: library code never prints, and ``ver run`` listens
while it loads a spec, to show the steps on its progress line.

The listener is a context variable rather than an argument: the work runs deep inside loading a
spec (the checker derives the models), and a ``progress`` argument on every function on the way,
``DareForest.fit`` included (whose signature scikit-learn fixes), would serve this alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_listener: ContextVar[Callable[[str], None] | None] = ContextVar("veritas_dsl_steps", default=None)
#: The stages the steps are part of, outermost first.
_stages: ContextVar[tuple[str, ...]] = ContextVar("veritas_dsl_stages", default=())


def step(text: str) -> None:
    """Report a step of long work, such as ``"DaRE fit: tree 3 of 100"``, after the stages it is
    part of; nothing happens when no one listens."""
    listener = _listener.get()
    if listener is not None:
        listener("; ".join((*_stages.get(), text)))


@contextlib.contextmanager
def stage(text: str) -> Iterator[None]:
    """Report ``text`` as a step, and the steps within the block as parts of it (the deletion
    of each model of a family: ``"family V: model 2 of 10; DaRE deletion: row 3 of 8"``)."""
    step(text)
    token = _stages.set((*_stages.get(), text))
    try:
        yield
    finally:
        _stages.reset(token)


@contextlib.contextmanager
def listening(callback: Callable[[str], None]) -> Iterator[None]:
    """Within the block, ``callback(text)`` is called with each step reported."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)
