"""The language server's answers without the protocol: files read once per version, errors in a
data file shown on the line that names it, hover on declared domains, and `ver lsp` without
pygls."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.editor.analysis import analyse
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
