"""The language server's answers without the protocol: files read once per version, errors in a
data file shown on the line that names it, hover on declared domains, `ver lsp` without pygls,
work linear in the spec, a size cap, and no exception ever escaping."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.diagnostics import Severity
from veritas_dsl.editor.analysis import MAX_LIVE_CHARS, analyse
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.editor.hover import completions, definition, hover

from .corpus import ROOT

SPEC = """model clf = xgboost "credit.json"
data rows = csv "rows.csv"
features {
    age     : int in [18, 90]
    housing : onehot(housing_own, housing_rent, housing_free)
}
query q {
    input x
    where x.age >= 60
    maximize clf(x)
}
"""


@pytest.fixture
def folder(tmp_path):
    shutil.copy(ROOT / "examples" / "models" / "credit.json", tmp_path)
    shutil.copy(ROOT / "examples" / "data" / "credit_test.csv", tmp_path / "rows.csv")
    return tmp_path


def test_model_and_data_files_are_read_again_only_when_they_change(folder):
    files, path = CachedFiles(), str(folder / "spec.ver")
    assert analyse(SPEC, path, files).diagnostics == ()
    assert files.reads == 2
    typed = SPEC.replace("x.age >= 60", "x.age >= 61")
    assert analyse(typed, path, files).diagnostics == ()
    assert files.reads == 2  # typing reads nothing
    later = os.stat(folder / "credit.json").st_mtime + 10
    os.utime(folder / "credit.json", (later, later))
    assert analyse(typed, path, files).diagnostics == ()
    assert files.reads == 3


def test_an_error_in_a_data_file_is_shown_on_the_path_that_names_it(folder):
    (folder / "rows.csv").write_text("age,income\n1,x\n")
    (diagnostic,) = analyse(SPEC, str(folder / "spec.ver"), CachedFiles()).diagnostics
    assert diagnostic.code == "V408"
    assert (diagnostic.span.line, diagnostic.span.column) == (2, 17)
    assert diagnostic.notes[-1].startswith(f"at {folder / 'rows.csv'}:2:")


def test_a_model_declared_without_a_file_is_a_warning_in_the_editor(folder):
    # It is given when the spec runs from Python; `ver run` refuses it (V415, an error).
    text = SPEC.replace('xgboost "credit.json"', "xgboost")
    (diagnostic,) = analyse(text, str(folder / "spec.ver"), CachedFiles()).diagnostics
    assert (diagnostic.code, diagnostic.severity) == ("V415", Severity.WARNING)
    assert (diagnostic.span.line, diagnostic.span.column) == (1, 1)


def test_hover_shows_declared_domains_and_one_hot_groups(folder):
    files = CachedFiles()
    analysis = analyse(SPEC, str(folder / "spec.ver"), files)
    assert hover(analysis, files, 8, 13).startswith("**feature** `age`: int in [18, 90]\n")
    text = hover(analysis, files, 4, 23)
    assert text.startswith("**feature** `housing_own`: in one-hot group `housing`")
    assert definition(analysis, 8, 13).line == 4  # the features block declares age
    labels = {c.label for c in completions(analysis, 8, 12)}
    assert "housing_rent" in labels and "clf" not in labels


def test_a_model_that_fails_to_load_leaves_the_others_for_hover(folder):
    (folder / "broken.json").write_text("{")
    text = SPEC + 'model bad = xgboost "broken.json"\n'
    files = CachedFiles()
    analysis = analyse(text, str(folder / "spec.ver"), files)
    assert [d.code for d in analysis.diagnostics] == ["V401"]
    assert analysis.checked is None and list(analysis.models) == ["clf"]
    assert "- trees: " in hover(analysis, files, 9, 15)


def test_ver_lsp_without_pygls_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pygls", None)
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    monkeypatch.delitem(sys.modules, "veritas_dsl.editor.server", raising=False)
    assert main(["lsp"]) == ExitCode.ERROR
    assert 'pip install "veritas-dsl[lsp]"' in capsys.readouterr().err


def _queries(n: int) -> str:
    query = "query q{} {{ input x  where x.age >= {}  maximize clf(x) }}\n"
    lines = [query.format(i, i % 90) for i in range(n)]
    return 'model clf = xgboost "credit.json"\n' + "".join(lines)


def _work(text: str, path: str, files: CachedFiles) -> int:
    """Lines of our own code (``veritas_dsl``, not lark's) run while checking ``text``: a
    measure of work that, unlike a clock, does not depend on the machine's load."""
    ours, count = str(ROOT / "veritas_dsl"), 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(ours) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        assert analyse(text, path, files).diagnostics == ()
    finally:
        sys.settrace(previous)
    return count


def test_checking_grows_linearly_with_the_spec(folder):
    """Once, finding each declared name scanned every token: 8,000 queries took 33 s, most of
    it there (40,000 never ended). Four times the queries must cost about four times the work."""
    files, path = CachedFiles(), str(folder / "spec.ver")
    analyse(_queries(1), path, files)  # the model is read, the caches warm
    small, large = _work(_queries(50), path, files), _work(_queries(200), path, files)
    assert large < 4.5 * small, (small, large)


def test_a_document_too_large_to_check_live_gets_one_warning(folder):
    path = str(folder / "spec.ver")
    fits = SPEC + "#" * (MAX_LIVE_CHARS - len(SPEC) - 1) + "\n"
    assert len(fits) == MAX_LIVE_CHARS and analyse(fits, path, CachedFiles()).diagnostics == ()
    files = CachedFiles()
    analysis = analyse(fits + "\n", path, files)
    (diagnostic,) = analysis.diagnostics
    assert diagnostic.code == "V002" and diagnostic.severity == Severity.WARNING
    assert diagnostic.message == "file too large for live checking"
    assert "ver check" in diagnostic.help
    assert (diagnostic.span.line, diagnostic.span.column) == (1, 1)
    assert analysis.spec is None and files.reads == 0  # nothing parsed, nothing read


def test_a_fault_of_the_checker_anywhere_is_a_diagnostic(folder, monkeypatch):
    """`analyse` never raises (a RecursionError once escaped it and nothing was published)."""

    def deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    path = str(folder / "spec.ver")
    for where in ("tokens", "parse_text", "Spec"):
        with monkeypatch.context() as patch:
            patch.setattr(f"veritas_dsl.editor.analysis.{where}", deep)
            (diagnostic,) = analyse(SPEC, path, CachedFiles()).diagnostics
        assert diagnostic.code == "V000" and "RecursionError" in diagnostic.message, where
        assert diagnostic.span.file == path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_data_file_that_is_not_a_regular_file_is_an_error_not_a_check_that_never_ends(folder):
    """Reading a FIFO nobody writes never returns: the check, and every check after it on the
    server's one worker, would wait for ever."""
    os.remove(folder / "rows.csv")
    os.mkfifo(folder / "rows.csv")
    (diagnostic,) = analyse(SPEC, str(folder / "spec.ver"), CachedFiles()).diagnostics
    assert diagnostic.code == "V406" and "it is a pipe, not a file" in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.column) == (2, 17)  # the path that names it
