"""What every engine is: a name, declared capabilities, an availability probe, and ``solve``."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from veritas_dsl.ir.query import CONSTRUCTS, Query
from veritas_dsl.result import Result


class Availability(enum.Enum):
    """Whether an engine can run here. Truthy only when it can."""

    AVAILABLE = "available"
    """Installed and usable without restriction."""
    LIMITED_LICENCE = "limited_licence"
    """Usable, but its licence caps the problem size."""
    NOT_INSTALLED = "not_installed"
    """Its package is missing."""
    BAD_LICENCE = "bad_licence"
    """Installed, but no licence lets it run."""

    def __bool__(self) -> bool:
        return self in (Availability.AVAILABLE, Availability.LIMITED_LICENCE)


@dataclass(frozen=True)
class Capabilities:
    """What an engine answers, as data checked before solving.

    Attributes
    ----------
    constructs : frozenset of str
        The query constructs it supports (names from :data:`veritas_dsl.ir.query.CONSTRUCTS`).
    exact : bool
        Its answers are exact when it finishes (optimum proven, or infeasibility proven).
    anytime : bool
        It reports valid bounds at every moment, so a time limit still gives an answer.
    """

    constructs: frozenset[str]
    exact: bool
    anytime: bool

    def __post_init__(self) -> None:
        unknown = self.constructs - CONSTRUCTS
        if unknown:
            raise ValueError(f"unknown constructs {sorted(unknown)}")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one solve; None means unlimited."""

    timeout_s: float | None = None
    max_steps: int | None = None
    max_memory_bytes: int | None = None


class UnsupportedQuery(ValueError):
    """An engine was asked for a construct it does not support, or a problem beyond its size."""


class Engine(Protocol):
    """The engine interface. ``solve`` never raises for a limit; it reports it in the Result.

    ``progress``, when given, is called now and then with an object carrying ``time_s``,
    ``lower``, ``upper`` (and whatever else the engine measures); engines that have nothing to
    report while they work may ignore it.
    """

    name: str
    capabilities: Capabilities

    def available(self) -> Availability: ...

    def solve(self, query: Query, limits: Limits, *, progress=None) -> Result: ...
