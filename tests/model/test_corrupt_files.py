"""Corrupt model files: byte flips and truncations of every format are located errors, never crashes.

A corrupt file once crashed the whole process: XGBoost's and LightGBM's own loaders read out of
bounds or abort on some of them (CatBoost and onnxruntime only ever see what we have checked), and an Ensemble whose children point anywhere makes the engines
read out of bounds. Mutated files run through ``ver run`` in one child process
(``run_specs.py``), so that a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import resource
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import given, settings
from hypothesis import strategies as st
from model_files import model_end

from veritas_dsl.model import load_model, ubjson

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("run_specs.py")
CREDIT = ROOT / "examples" / "models" / "credit.json"

#: format name -> (file suffix, the model declaration, with {path} for the file)
FORMATS = {
    "xgboost_json": (".json", 'xgboost "{path}"'),
    "xgboost_ubj": (".ubj", 'xgboost "{path}"'),
    "xgboost_dump": (".json", 'xgboost_dump "{path}" (features = 7)'),
    "lightgbm": (".txt", 'lightgbm "{path}"'),
    "ensemble": (".json", 'ensemble "{path}"'),
    "skops": (".skops", 'sklearn "{path}"'),
    "catboost": (".json", 'catboost "{path}"'),
    "onnx": (".onnx", 'onnx "{path}"'),
}
PER_FORMAT = 8
#: The child's address space: a corrupt length must not make it take the machine's memory.
MEMORY_LIMIT = 6 * 2**30


def _xgboost_dump() -> bytes:
    """The credit model as the literature ships dumps: features split on by integer id."""
    booster = xgb.Booster(model_file=str(CREDIT))
    booster.feature_names = None
    trees = [json.loads(tree) for tree in booster.get_dump(dump_format="json")]
    text = json.dumps(trees, indent=1)
    return re.sub(r'"split": "f(\d+)"', r'"split": \1', text).encode()


def _lightgbm() -> bytes:
    import lightgbm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    params = {"objective": "binary", "num_leaves": 6, "verbose": -1, "num_threads": 1, "seed": 0}
    booster = lightgbm.train(params, lightgbm.Dataset(X, X[:, 0] + X[:, 1] > 0), 4)
    return booster.model_to_string().encode()


def _skops() -> bytes:
    """A small forest as a skops file, its zip timestamps fixed so that the bytes are too."""
    import skops.io
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    forest = RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0)
    data = skops.io.dumps(forest.fit(X, X[:, 0] > 0))
    fixed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(fixed, "w") as target:
        for info in sorted(source.infolist(), key=lambda i: i.filename):
            target.writestr(
                zipfile.ZipInfo(info.filename, (2020, 1, 1, 0, 0, 0)), source.read(info)
            )
    return fixed.getvalue()


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict[str, bytes]:
    """The unmutated file of each format; each loads."""
    folder = tmp_path_factory.mktemp("originals")
    load_model(CREDIT).save(folder / "ensemble.json")
    files = {
        "xgboost_json": CREDIT.read_bytes(),
        "xgboost_ubj": bytes(xgb.Booster(model_file=str(CREDIT)).save_raw("ubj")),
        "xgboost_dump": _xgboost_dump(),
        "lightgbm": _lightgbm(),
        "ensemble": (folder / "ensemble.json").read_bytes(),
        "skops": _skops(),
        "catboost": (ROOT / "examples" / "models" / "credit_catboost.json").read_bytes(),
        "onnx": (ROOT / "examples" / "models" / "scaled.onnx").read_bytes(),
    }
    for name, data in files.items():
        suffix, declaration = FORMATS[name]
        path = folder / f"{name}{suffix}"
        path.write_bytes(data)
        kind = declaration.split()[0]
        load_model(path, kind, options={"features": 7} if kind == "xgboost_dump" else None)
    return files


def mutate(data: bytes, mutation: tuple) -> bytes:
    """Apply one mutation: ``("flip", [(position, byte), ...])`` sets bytes, ``("truncate", n)``
    cuts, ``("digit", k, char)`` replaces the k-th ASCII digit (where the indices of a text
    format are). Positions wrap around the length."""
    out = bytearray(data)
    kind = mutation[0]
    if kind == "flip":
        for position, byte in mutation[1]:
            at = position % len(out)
            out[at] = byte if byte != out[at] else byte ^ 1
    elif kind == "truncate":
        del out[mutation[1] % len(out) :]
    else:
        digits = [i for i, b in enumerate(out) if 48 <= b <= 57]
        out[digits[mutation[1] % len(digits)]] = mutation[2]
    return bytes(out)


def run_specs(folder: Path, models: dict[str, tuple[str, bytes]]) -> dict[str, dict]:
    """Write each model (name -> (format, bytes)) with a spec using it; run them all in one child.

    Returns name -> {"code", "stderr"}. A child that dies by a signal fails the test, naming the
    file it was on.
    """
    specs = []
    for name, (format, data) in models.items():
        suffix, declaration = FORMATS[format]
        (folder / f"{name}{suffix}").write_bytes(data)
        spec = folder / f"{name}.ver"
        model = declaration.format(path=f"{name}{suffix}")
        spec.write_text(f"model m = {model}\nquery q {{\n    input x\n    maximize m(x)\n}}\n")
        specs.append(spec)
    results: dict[str, dict] = {}
    while len(results) < len(specs):
        todo = [str(s) for s in specs[len(results) :]]
        child = subprocess.run(
            [sys.executable, str(CHILD), *todo],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=900,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT,) * 2),
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        for line in child.stdout.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT ") :])
                results[Path(result["spec"]).stem] = result
        if child.returncode != 0:
            crashed = Path(specs[len(results)]).stem
            pytest.fail(
                f"the child died with code {child.returncode} on {crashed}: {child.stderr[-3000:]}"
            )
    return results


def assert_located(name: str, result: dict, folder: Path) -> None:
    """Exit 0 (the model loaded and the query ran) or 2 with errors located in the spec."""
    stderr = result["stderr"]
    assert "internal error" not in stderr and "Traceback" not in stderr, (name, stderr)
    assert result["code"] in (0, 2), (name, result)
    if result["code"] == 2:
        spec = folder / f"{name}.ver"
        assert re.search(r"error\[V\d+\]", stderr), (name, stderr)
        assert f"--> {spec}:" in stderr, (name, stderr)
        if "error[V401]" in stderr:
            reason = stderr.split("cannot load model `m`: ", 1)[1].splitlines()[0]
            assert len(reason) > 10, (name, stderr)


edit = st.tuples(st.integers(0, 2**31), st.integers(0, 255))
mutation = st.one_of(
    st.tuples(st.just("flip"), st.lists(edit, min_size=1, max_size=3)),
    st.tuples(st.just("truncate"), st.integers(0, 2**31)),
    st.tuples(st.just("digit"), st.integers(0, 2**31), st.sampled_from(b"0123456789-")),
)
batches = st.fixed_dictionaries(
    {f: st.lists(mutation, min_size=PER_FORMAT, max_size=PER_FORMAT) for f in FORMATS}
)


# Each example is one child process running a batch of mutants of every format, so examples are
# few; under the CI profile they are the same on every run.
@settings(
    max_examples=1,
    deadline=None,
    derandomize=os.environ.get("HYPOTHESIS_PROFILE") == "ci",
)
@given(batches)
def test_mutated_model_files_are_located_errors(originals, batch):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        models = {
            f"{format}_{i}": (format, mutate(originals[format], m))
            for format, mutations in batch.items()
            for i, m in enumerate(mutations)
        }
        results = run_specs(folder, models)
        for name, result in results.items():
            assert_located(name, result, folder)
        # A file cut short is never loaded as a smaller model (see test_truncated_files.py).
        for format, mutations in batch.items():
            for i, m in enumerate(mutations):
                cut = m[1] % len(originals[format]) if m[0] == "truncate" else None
                if cut is not None and cut < model_end(format, originals[format]):
                    assert "error[V401]" in results[f"{format}_{i}"]["stderr"], (format, cut)


def _replace(data: bytes, old: bytes, new: bytes) -> bytes:
    assert old in data, old
    return data.replace(old, new, 1)


def _json_edit(data: bytes, edit) -> bytes:
    document = json.loads(data)
    edit(document)
    return json.dumps(document).encode()


def _tree0(document: dict) -> dict:
    return document["learner"]["gradient_booster"]["model"]["trees"][0]


def _first_value(data: bytes, key: str, new: str) -> bytes:
    """The first ``key=...`` line of a LightGBM text with its first number replaced."""
    match = re.search(rf"^{key}=(\S+)".encode(), data, re.MULTILINE)
    return data[: match.start(1)] + new.encode() + data[match.end(1) :]


def _out_of_range_parents(parents) -> list[int]:
    bad = [int(p) for p in parents]
    bad[3] = 10**6
    return bad


def _json_shadowed_parents(data: bytes) -> bytes:
    """Tree 0's `parents` twice: out of range, then as it was under a name spelled with a `\\u`
    escape. Python's json decodes the escape and keeps the last of two equal keys; XGBoost's
    parser keeps `\\u` escapes as written, so to it they are two keys and it loads the first."""
    document = json.loads(data)
    good = _tree0(document).pop("parents")
    _tree0(document)["@"] = None
    shadowed = (
        f'"parents": {json.dumps(_out_of_range_parents(good))}, '
        f'"parent\\u0073": {json.dumps(good)}'
    )
    return _replace(json.dumps(document).encode(), b'"@": null', shadowed.encode())


def _ubj_duplicate_parents(data: bytes) -> bytes:
    """Tree 0's `parents` twice in the .ubj, out of range first: XGBoost keeps the first of two
    equal keys, a reader that keeps the last checks the other."""
    key = b"L" + (7).to_bytes(8, "big") + b"parents"
    start = data.index(key) + len(key)
    reader = ubjson._Reader(memoryview(data))
    reader.pos = start
    good = reader.value()
    header = data[start : reader.pos - 4 * len(good)]
    bad = np.asarray(_out_of_range_parents(good), dtype=">i4").tobytes()
    return data[: start - len(key)] + key + header + bad + data[start - len(key) :]


#: Corrupt files that crashed the process or ended in an internal error before, by format.
KNOWN = {
    # XGBoost's loader follows `parents` unchecked: segmentation fault.
    "parents_out_of_range": (
        "xgboost_json",
        lambda d: _json_edit(d, lambda doc: _tree0(doc)["parents"].__setitem__(3, 10**6)),
    ),
    # The same, found by flipping one byte of the .ubj (with XGBoost 3.2's serialisation).
    "ubj_byte_flip": ("xgboost_ubj", lambda d: mutate(d, ("flip", [(9940, 145)]))),
    # Keys read one way by us and another by XGBoost: it loaded what we had not checked.
    "parents_under_escaped_key": ("xgboost_json", _json_shadowed_parents),
    "parents_twice_in_ubj": ("xgboost_ubj", _ubj_duplicate_parents),
    # XGBoost could not load `num_feature = 0` when asked to save: XGBoostError.
    "no_features": (
        "xgboost_json",
        lambda d: _json_edit(
            d, lambda doc: doc["learner"]["learner_model_param"].__setitem__("num_feature", "0")
        ),
    ),
    # XGBoost quotes the file in its error, whose decoding failed: UnicodeDecodeError.
    "pickle_as_xgboost": ("xgboost_ubj", lambda d: pickle.dumps({"not": "a model"})),
    "not_utf8": ("xgboost_json", lambda d: _replace(d, b'"learner"', b'"le\xff\xfeer"')),
    # LightGBM parses its trees in parallel and aborts on an error there.
    "lightgbm_bad_token": ("lightgbm", lambda d: _first_value(d, "threshold", "o8.61")),
    # LightGBM follows children unchecked: dump_model read out of bounds.
    "lightgbm_child_out_of_range": ("lightgbm", lambda d: _first_value(d, "left_child", "99")),
    # LightGBM reads a parameter line as `[name: value]` unchecked (we give it none: this loads).
    "lightgbm_parameter_line": (
        "lightgbm",
        lambda d: _replace(d, b"[boosting: gbdt]", b"[boosting gbdt]"),
    ),
    # numpy wrapped the index around (or raised OverflowError): an internal error.
    "ensemble_huge_index": ("ensemble", lambda d: _replace(d, b'"left":[1,', b'"left":[1e20,')),
}


def test_known_corrupt_files_are_located_errors(originals):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        models = {key: (format, edit(originals[format])) for key, (format, edit) in KNOWN.items()}
        results = run_specs(folder, models)
        for key, result in results.items():
            assert_located(key, result, folder)
            loads = key == "lightgbm_parameter_line"
            assert ("error[V401]" in result["stderr"]) != loads, (key, result)
