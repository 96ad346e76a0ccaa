"""The progress line of `ver run` on a real terminal: a pseudo-terminal 80 columns wide, whose
bytes a terminal emulator (pyte) renders. At every moment the screen holds at most one line,
never wider than the terminal, redrawn in place; none is left once the report is printed; and
nothing is drawn when stderr is not a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pyte
from lang.specs import EXAMPLES

COLUMNS, ROWS = 80, 24
#: A batch of 20 rows and one of 10 (no warning on stderr, which would take a line of its own).
SPEC = EXAMPLES / "closest.ver"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    # Draw every update from the start: many redraws for a small batch.
    env["TQDM_MININTERVAL"] = "0"
    return env


def on_terminal(*argv: str) -> tuple[list[bytes], bytes]:
    """What `ver` writes to a terminal of COLUMNS x ROWS as its stderr, in the chunks read, and
    its stdout (a pipe)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "veritas_dsl.cli", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=environment(),
    )
    os.close(slave)
    chunks, deadline = [], time.monotonic() + 500  # a hang fails, it does not time anything
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out, _ = child.communicate(timeout=60)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
    assert child.returncode in (0, 1), out
    return chunks, out


def one_line_in_place(chunks: list[bytes]) -> bytes:
    """What was written, once checked: rendered chunk by chunk, the screen held one line at most,
    on the first row, no wider than the terminal, and none once the run ended."""
    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    for chunk in chunks:
        stream.feed(chunk)
        shown = [line for line in screen.display if line.strip()]
        assert len(shown) <= 1, shown  # one line, never a stale one above it
        assert screen.cursor.y == 0
    assert not any(line.strip() for line in screen.display)  # erased before the report
    written = b"".join(chunks)
    assert b"\n" not in written.replace(b"\r\n", b"")  # redrawn after \r, never a new line
    for piece in re.split(rb"[\r\n]", written):
        assert len(ANSI.sub(b"", piece).decode()) <= COLUMNS, piece
    return written


def test_one_progress_line_redrawn_in_place_at_80_columns():
    chunks, out = on_terminal("run", str(SPEC), "--jobs", "1")
    written = one_line_in_place(chunks)
    counts = set(re.findall(rb"\r(\d+)/20 ", written))
    assert len(counts) >= 10, counts  # the two batches' rows, shown as they finished
    assert b"closest" in out and b"income_only" in out  # the report itself went to stdout


def test_a_family_of_deletions_shows_its_progress_on_the_line():
    # recourse.ver makes 10 DaRE deletion variants while it loads, then runs a batch.
    chunks, _ = on_terminal("run", str(EXAMPLES / "recourse.ver"), "--jobs", "1")
    written = one_line_in_place(chunks).decode()
    assert "family V: model 10 of 10; DaRE deletion: row " in written
    assert re.search(r"\r\d+/\d+ ", written)  # then the batch


def test_nothing_is_drawn_when_stderr_is_not_a_terminal():
    done = subprocess.run(
        [sys.executable, "-m", "veritas_dsl.cli", "run", str(SPEC), "--jobs", "1"],
        capture_output=True,
        env=environment(),
        timeout=500,
    )
    assert done.returncode in (0, 1)
    assert done.stderr == b""


def test_engine_reports_are_redrawn_after_a_row_that_finished_fast():
    # tqdm's default adapts a count of rows between redraws: after a fast row, an engine's
    # report (an update of no row) was never drawn again (CI: a first search that compiled).
    from veritas_dsl.report.progress import Bar

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    stream = os.fdopen(slave, "w")
    bar = Bar(True, stream)
    bar.total, bar.last = 2, "quick: infeasible"
    bar.working = "a"
    bar._show(finished=1)  # a fast row
    clock = [time.time()]
    bar._bar._time = lambda: clock[0]  # tqdm's clock, moved by hand: no waiting, no timing
    for k in range(5):
        clock[0] += 1.0  # well past mininterval
        bar.working = f"gap[0] (astar): [{k}, 9]"
        bar._show()
    stream.flush()
    drawn = b""
    while select.select([master], [], [], 1.0)[0]:  # a terminal hands its bytes over in pieces
        drawn += os.read(master, 65536)
        if b"[4, 9]" in drawn:
            break
    bar.close()
    stream.close()
    os.close(master)
    assert all(f"[{k}, 9]".encode() in drawn for k in range(5)), drawn
