"""Model, data and rows files that are no such thing (a device, a directory, a sparse file of
gigabytes, a path with a NUL byte or too long a name) are located errors with exit 2 on every
route: `ver run`, `ver check`, `ver inspect`, `ver leakage`, the language server's analysis and
the Python API. They were internal errors (OSError 36, "embedded null byte", MemoryError) or were
read whole before being refused (2.4 GB and more for a 2 GB sparse file).

Sparse files (``os.truncate``) take no disk, and nothing here is read: a file over its limit,
like a device, is refused before it is opened.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from veritas_dsl import Ensemble, SpecError, load, load_model
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.editor.analysis import analyse
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.model import ModelError
from veritas_dsl.unlearning import DareForest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
GIB = 2**30


def sparse(path: Path, size: int) -> str:
    path.touch()
    os.truncate(path, size)
    return str(path)


@pytest.fixture
def folder(tmp_path):
    shutil.copy(MODELS / "credit.json", tmp_path)
    shutil.copy(MODELS / "unlearning.dare", tmp_path)
    sparse(tmp_path / "huge.txt", 2 * GIB)  # LightGBM text: was read whole (4.4 GB, 82 s)
    sparse(tmp_path / "huge.json", 2 * GIB)  # XGBoost JSON: was read whole (2.4 GB)
    sparse(tmp_path / "huge.dare", 5 * GIB)
    sparse(tmp_path / "huge.csv", 2 * GIB)  # was a MemoryError
    sparse(tmp_path / "huge_ids.txt", 65 * 2**20)
    return tmp_path


SPEC_CASES = [
    ('model m = lightgbm "huge.txt"', "V401", "2 GiB, more than the 1 GiB allowed"),
    ('model m = xgboost "huge.json"', "V401", "2 GiB, more than the 1 GiB allowed"),
    ('model m = dare "huge.dare"', "V401", "5 GiB, more than the 4 GiB allowed"),
    ('model m = xgboost "/dev/zero"', "V401", "it is a device, not a file"),
    ('model m = xgboost "."', "V401", "it is a directory, not a file"),
    ('model m = xgboost "m\0.json"', "V401", "the path contains a NUL byte"),
    (f'model m = xgboost "{"m" * 300}.json"', "V401", "the path is too long"),
    ('data d = csv "huge.csv"', "V406", "2 GiB, more than the 1 GiB allowed for a data file"),
    ('data d = libsvm "/dev/zero" (features = 7)', "V406", "it is a device, not a file"),
    ('data d = csv "d\0.csv"', "V406", "the path contains a NUL byte"),
    ('model d = delete(f, rows = "huge_ids.txt")', "V406", "more than the 64 MiB allowed"),
    ('model d = delete(f, rows = "/dev/zero")', "V406", "it is a device, not a file"),
    ('model d = delete(f, rows = "r\0.txt")', "V406", "the path contains a NUL byte"),
]


def write_spec(folder: Path, line: str) -> Path:
    spec = folder / "s.ver"
    base = 'model clf = xgboost "credit.json"\n'
    if "delete(" in line:
        base = 'model f = dare "unlearning.dare"\n'
    spec.write_text(base + line + "\n")
    return spec


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize("line, code, message", SPEC_CASES)
def test_spec_routes(folder, capsys, command, line, code, message):
    spec = write_spec(folder, line)
    assert main([command, str(spec)]) == ExitCode.ERROR
    err = "".join(capsys.readouterr())  # `ver check` reports a spec's errors on stdout
    assert f"error[{code}]" in err and message in err and "internal error" not in err
    assert f"--> {spec}:2:" in err  # at the declaration


@pytest.mark.parametrize("line, code, message", SPEC_CASES)
def test_the_language_server_locates_them(folder, line, code, message):
    spec = write_spec(folder, line)
    analysis = analyse(spec.read_text(), str(spec), CachedFiles())
    [diagnostic] = analysis.diagnostics
    assert (diagnostic.code, diagnostic.span.line) == (code, 2) and message in diagnostic.message


@pytest.mark.parametrize("line, code, message", SPEC_CASES)
def test_python_load(folder, line, code, message):
    with pytest.raises(SpecError) as error:
        load(write_spec(folder, line))
    [diagnostic] = error.value.diagnostics
    assert diagnostic.code == code and message in diagnostic.message


@pytest.mark.parametrize(
    "name, message",
    [
        ("huge.txt", "2 GiB, more than the 1 GiB allowed for a model file of format lightgbm"),
        ("huge.json", "2 GiB, more than the 1 GiB allowed"),
        ("/dev/zero", "it is a device, not a file"),
        (".", "it is a directory, not a file"),
        ("m" * 300 + ".json", "the path is too long for the file system"),
    ],
)
def test_inspect_and_load_model(folder, capsys, monkeypatch, name, message):
    monkeypatch.chdir(folder)
    assert main(["inspect", name]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err
    with pytest.raises(ModelError, match=message):
        load_model(name, format="xgboost" if name != "huge.txt" else None)


@pytest.mark.parametrize(
    "read",
    [Ensemble.from_xgboost, Ensemble.from_lightgbm, Ensemble.load, DareForest.load],
    ids=["from_xgboost", "from_lightgbm", "Ensemble.load", "DareForest.load"],
)
def test_the_importers_check_paths_too(folder, read):
    for path, message in [
        (folder / "huge.dare", "more than the"),
        (Path("/dev/zero"), "it is a device, not a file"),
        (folder, "it is a directory, not a file"),
        (Path("m\0.json"), "the path contains a NUL byte"),
    ]:
        with pytest.raises(ModelError, match=message):
            read(path)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["huge.dare", "--delete", "1"], "5 GiB, more than the 4 GiB allowed"),
        (["/dev/zero", "--delete", "1"], "it is a device, not a file"),
        (["unlearning.dare", "--delete", "@/dev/zero"], "it is a device, not a file"),
        (["unlearning.dare", "--delete", "@huge_ids.txt"], "more than the 64 MiB allowed"),
    ],
)
def test_leakage(folder, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(folder)
    assert main(["leakage", *arguments]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err


@pytest.mark.parametrize("command", ["run", "check", "fmt"])
@pytest.mark.parametrize(
    "name, message",
    [
        ("/dev/zero", "it is a device, not a file"),  # was read until MemoryError (fmt too)
        ("huge.ver", "the file holds 100 MiB, more than the 64 MiB allowed for a spec file"),
    ],
)
def test_the_spec_file_itself(folder, capsys, monkeypatch, command, name, message):
    monkeypatch.chdir(folder)
    sparse(folder / "huge.ver", 100 * 2**20)
    assert main([command, name]) == ExitCode.ERROR
    out = "".join(capsys.readouterr())
    assert "error[V001]" in out and message in out and "internal error" not in out
