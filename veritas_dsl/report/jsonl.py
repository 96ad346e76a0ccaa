"""``ver run --jsonl FILE`` and ``--resume FILE``: results as JSON Lines, written as rows finish.

Each line is one finished query (or batch row): the object of an entry of ``--json``'s
``results`` (``query``, ``row``, ``kind``, ``status``, bounds, ``witness``, ``checks`` ...),
plus ``"schema"`` (as every JSON document of ``ver``) and ``"spec_hash"``: the run's fingerprint
(SHA-256 of the spec text, the bytes of its models and data, and the ``--solver`` and
``--timeout`` that decide its answers). The fingerprint is in
every line rather than in a header line so that each line stands alone: a reader of results
meets no special first line, a file cut short or two files concatenated are still checked line
by line, and no header can be lost. A run interrupted by Ctrl-C writes no line for the rows it
stopped, so that ``--resume`` answers them again.

Lines are flushed one by one: a killed run loses nothing already answered (at most its last
line is cut short, which a resume drops). A run holds the file locked while it writes it, so that
two runs never answer the same rows into one file; a file that answers a row twice anyway (two
files pasted together) counts the row once when both lines give the same answer, and is refused
when they differ.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field

from veritas_dsl.errors import UserError
from veritas_dsl.outcome import QueryRun
from veritas_dsl.report import csv as csv_report
from veritas_dsl.report.files import LineFile, OutputError
from veritas_dsl.report.json import run_entry, versioned


class ResultsFileError(UserError):
    """A results file that cannot be read, or that another run wrote."""


def fingerprint(spec_digest: str, solver: str | None, timeout_s: float | None) -> str:
    """What a results file's lines must share to be resumed: the spec, its files, the options."""
    options = json.dumps({"solver": solver, "timeout_s": timeout_s}, sort_keys=True)
    return hashlib.sha256(f"{spec_digest}\0{options}".encode()).hexdigest()


def line(run: QueryRun, spec_hash: str) -> str:
    entry = versioned(run_entry(run))
    entry["spec_hash"] = spec_hash
    return json.dumps(entry) + "\n"


def read(path: str) -> list[dict]:
    """The entries of a results file; a last line cut short (a killed run) is left out."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise ResultsFileError(f"cannot read {path}: {error.strerror or error}") from None
    lines = data.split(b"\n")
    entries = []
    for number, text in enumerate(lines[:-1], 1):  # the last piece has no line end
        try:
            entry = json.loads(text)
            if not isinstance(entry, dict) or "query" not in entry or "spec_hash" not in entry:
                raise ValueError("not a result")
        except ValueError:
            raise ResultsFileError(
                f"{path}:{number}: not a line of `ver run --jsonl` (a result as JSON)"
            ) from None
        entries.append(entry)
    return entries


def answered(entries: list[dict], path: str, spec_hash: str) -> frozenset[tuple[str, int | None]]:
    """The ``(query, row)`` pairs a results file answers; an error when a line of it comes from
    another spec, other model or data files, or other options, or answers a row twice with
    different answers."""
    for number, entry in enumerate(entries, 1):
        if entry["spec_hash"] != spec_hash:
            raise ResultsFileError(
                f"{path}:{number}: this file holds results of another run: the spec, its "
                "models or data, or --solver/--timeout differ (its spec_hash "
                f"{entry['spec_hash'][:12]}, this run's {spec_hash[:12]}); "
                "resume it with the same spec and options, or write to another file"
            )
    return frozenset(map(_row, distinct(entries, path)[0]))


def _row(entry: dict) -> tuple[str, int | None]:
    return entry["query"], entry.get("row")


#: What differs between two lines that give a row the same answer: how long it took.
_TIMING = ("time_s", "trace", "stats")


def _answer(entry: dict) -> dict:
    answer = {key: value for key, value in entry.items() if key not in _TIMING}
    if "engines" in answer:
        answer["engines"] = [_answer(e) for e in answer["engines"]]
    return answer


def distinct(entries: list[dict], path: str) -> tuple[list[dict], int]:
    """The entries of a results file, a row's first line only, and how many lines repeated a row
    already answered. A row answered twice the same way (up to times) counts once; answered
    differently, the file is refused: which answer stands would be a guess."""
    first: dict[tuple[str, int | None], int] = {}
    kept = []
    for number, entry in enumerate(entries, 1):
        earlier = first.setdefault(_row(entry), number)
        if earlier == number:
            kept.append(entry)
        elif _answer(entry) != _answer(entries[earlier - 1]):
            query, row = _row(entry)
            name = query if row is None else f"{query}[{row}]"
            raise ResultsFileError(
                f"{path}:{number}: `{name}` answered again, differently from line {earlier}; "
                "remove the line that should not stand (or both, and --resume answers the row "
                "again)"
            )
    return kept, len(entries) - len(kept)


@dataclass
class Tally:
    """What a results file holds, for the summary at the end of a run: a row once, however
    many lines answer it (``repeated`` counts the lines beyond the first)."""

    results: int = 0
    verdicts: Counter = field(default_factory=Counter)
    errored: int = 0
    statuses: Counter = field(default_factory=Counter)
    repeated: int = 0

    @classmethod
    def of(cls, entries: list[dict], path: str) -> Tally:
        rows, repeated = distinct(entries, path)
        tally = cls(results=len(rows), repeated=repeated)
        for entry in rows:
            tally.statuses[entry["status"]] += 1
            tally.errored += entry["status"] in ("error", "unsupported")
            tally.verdicts.update(c["verdict"] for c in entry["checks"])
        return tally

    @property
    def failed(self) -> bool:
        return any(v != "holds" for v in self.verdicts.elements())

    def text(self, path: str) -> str:
        v = self.verdicts
        line = (
            f"{path}: {self.results} results, {sum(v.values())} checks: "
            f"{v['holds']} hold, {v['failed']} failed"
        )
        line += f", {v['vacuous']} vacuous" if v["vacuous"] else ""
        line += f", {v['undecided']} undecided"
        line += f", {self.errored} not run by their engine" if self.errored else ""
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items()))
        return line + (f" (status: {statuses})" if statuses else "")

    def repeats(self, path: str) -> str | None:
        """A note on the lines that answered a row again, if any did."""
        if not self.repeated:
            return None
        lines = f"{self.repeated} line{'s' if self.repeated > 1 else ''}"
        return (
            f"note: {path}: {lines} answered a row again, with the answer of its first line; "
            "each row is counted once"
        )


class Streams:
    """``--csv`` and ``--jsonl``/``--resume`` files of ``ver run``, a line written as each query
    finishes.

    Neither is created before its first line (or the end of a run that finished), so that a
    spec or scheduler error, or a Ctrl-C before any row finished, leaves them as they were; a
    results file that another run is writing, or a resume file whose lines another run wrote,
    is refused before anything runs."""

    def __init__(
        self, target: str | None, resume: bool, csv_path: str | None, spec_hash: str
    ) -> None:
        """``spec_hash``: the run's :func:`fingerprint`. With ``resume``, the rows ``target``
        answers are skipped, after checking that the same run wrote them."""
        self.target, self.spec_hash = target, spec_hash
        self.skip: frozenset[tuple[str, int | None]] = frozenset()
        self.results = self.csv = None
        self.failure: OutputError | None = None
        if target:
            self.results = LineFile(target, append=resume, lock=True)  # before it is read
            if resume:
                try:
                    self.skip = answered(read(target), target, spec_hash)
                except ResultsFileError:
                    self.results.close(create=False)
                    raise
        if csv_path:
            self.csv = LineFile(csv_path, first=csv_report.header())

    def write(self, run: QueryRun) -> None:
        """Write ``run``'s lines; a file that cannot be written is given up (the run goes on,
        and :meth:`close` raises its error)."""
        try:
            if self.results is not None and not run.interrupted:  # a resume answers those again
                self.results.write(line(run, self.spec_hash))
            if self.csv is not None:
                self.csv.write(csv_report.line(run))
        except OutputError as error:
            self.failure = self.failure or error
            self.results = self.csv = None

    def close(self, created: bool) -> None:
        for stream in (self.results, self.csv):
            if stream is not None:
                try:
                    stream.close(create=created)
                except OutputError as error:
                    self.failure = self.failure or error

    def check(self) -> None:
        """Raise the error of a file that could not be written, if one could not."""
        if self.failure is not None:
            raise self.failure

    def tally(self) -> Tally | None:
        """What the results file holds now, earlier runs' lines included (None without one, or
        when it could not be written)."""
        if not self.target or self.failure or not os.path.exists(self.target):
            return None  # (none is made for a run stopped before its first row)
        return Tally.of(read(self.target), self.target)
