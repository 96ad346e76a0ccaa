"""Input files (veritas_dsl.inputs): what may be read, how much, and how their text is quoted.

Sparse files (``os.truncate``) cost no disk; a pipe and a device are refused without being
opened, so no test here reads one.
"""

from __future__ import annotations

import os

import pytest

from veritas_dsl.diagnostics import Diagnostic, Sources, Span, render
from veritas_dsl.inputs import InputError, checked_size, excerpt, read_bytes


@pytest.mark.parametrize(
    "text, shown",
    [
        ("12.5abc", "12.5abc"),
        ("root:x:0:0:root:/root:/bin/bash", "root:x:0:0:root:/roo…"),
        ("a\tb\x1b[2Jc", "a\\tb\\x1b[2Jc"),  # a terminal escape is shown, not sent
        ("\x00" * 30, "\\x00" * 5 + "…"),  # the limit is on what is shown
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("caf\u00e9", "caf\u00e9"),
        (None, "None"),
        (["1"] * 100, "['1', '1', '1', '1',…"),
    ],
)
def test_excerpt_is_short_and_escaped(text, shown):
    assert excerpt(text) == shown


def test_a_regular_file_within_the_limit_is_read(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"12345")
    assert checked_size(path, 5) == 5
    assert read_bytes(path, 5) == b"12345"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p.mkdir(), "it is a directory, not a file"),
        (lambda p: os.mkfifo(p), "it is a pipe, not a file"),  # opening it would wait forever
        (lambda p: os.truncate(_touch(p), 2**31), "the file holds 2 GiB, more than the 1 GiB"),
    ],
)
def test_what_is_not_a_file_within_the_limit_is_refused_unread(tmp_path, make, message):
    path = tmp_path / "f"
    make(path)
    with pytest.raises(InputError, match=message):
        checked_size(path, 2**30)
    with pytest.raises(InputError, match=message):
        read_bytes(path, 2**30)


@pytest.mark.parametrize(
    "path, message",
    [
        ("/dev/zero", "it is a device, not a file"),  # read, it never ends
        ("a\0b", "the path contains a NUL byte"),  # was ValueError: embedded null byte
        ("m" * 300 + ".json", "the path is too long for the file system"),  # was OSError 36
    ],
)
def test_paths_that_cannot_name_a_file_are_refused(path, message):
    with pytest.raises(InputError, match=message):
        checked_size(path, 2**30)


def test_a_missing_file_is_the_usual_error():
    with pytest.raises(FileNotFoundError):
        checked_size("/nonexistent/f.csv", 10)


def test_a_file_whose_size_says_nothing_is_read_only_up_to_the_limit():
    # /proc files have size 0 and any content: the read stops past the limit
    assert checked_size("/proc/self/status", 16) == 0
    with pytest.raises(InputError, match="more than the 16 bytes allowed"):
        read_bytes("/proc/self/status", 16)


def test_the_renderer_never_shows_lines_of_files_other_than_specs(tmp_path):
    rows = tmp_path / "passwd"
    rows.write_text("root:x:0:0:root:/root:/bin/bash\n")
    message = f"`{excerpt('root:x:0:0:root:/root:/bin/bash')}` is not a row id"
    shown = render(Diagnostic("V408", message, Span(str(rows), 1, 1, 1, 32)))
    assert "/bin/bash" not in shown and f"--> {rows}:1:1" in shown
    spec = tmp_path / "s.ver"
    spec.write_text("model m = ensemble 'm.json'\n")
    assert "1 | model m" in render(Diagnostic("V401", "x", Span(str(spec), 1, 1, 1, 6)))
    assert Sources().line(str(rows), 1) is None


def _touch(path):
    path.touch()
    return path


def test_the_renderer_cuts_a_long_line_around_its_span_and_escapes_control_characters():
    line = "where " + "not " * 5000 + "x.f >= 1\x1b[2J\x00"
    column = line.index("x.f") + 1
    sources = Sources({"s.ver": line})
    shown = render(Diagnostic("V103", "too deep", Span("s.ver", 1, column, 1, column + 3)), sources)
    source_line, caret_line = shown.splitlines()[3:5]
    assert len(source_line) < 140 and source_line.startswith("1 | …")
    text = source_line[len("1 | "):]
    caret = caret_line[len("  | "):]
    assert text[caret.index("^") : caret.index("^") + 3] == "x.f" and caret.count("^") == 3
    assert "\x1b" not in shown and "\x00" not in shown
    short = render(Diagnostic("V1", "m", Span("s.ver", 1, 1, 1, 6)), Sources({"s.ver": "model"}))
    assert "1 | model\n  | ^^^^^" in short
