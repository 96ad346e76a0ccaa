"""XGBoost is optional (issue 42, item 4): without it an XGBoost model file is read alone, with
the float32 numbers XGBoost itself holds, and specs on it give the same answers; what needs the
package (a model in memory) says how to install it."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.model import xgboost_document
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.xgboost import from_file
from veritas_dsl.model.xgboost_document import float32_of

ROOT = Path(__file__).parents[2]

#: Run in a child process where ``import xgboost`` fails, as in a plain ``pip install .``.
HIDDEN = "import sys; sys.modules['xgboost'] = None\n"


def hidden(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", HIDDEN + code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
        timeout=600,  # a hang fails; nothing here is timed
    )


def nearest_float32(text: str) -> np.float32:
    """The float32 nearest the decimal ``text``, ties to even, by exact arithmetic."""
    exact = Fraction(text)
    near = np.float32(float(text))
    around = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
    return min(around, key=lambda c: (abs(Fraction(float(c)) - exact), c.view(np.uint32) & 1))


def beside_midpoints(n: int, seed: int) -> list[str]:
    """Decimals a hair above, below or exactly at the midpoint of two adjacent float32s: through
    float64 they land on the midpoint, and float32() then rounds half of them the wrong way."""
    rng = np.random.default_rng(seed)
    texts = []
    for scale in rng.choice([1e-40, 1.0, 100.0, 1e30], size=n):
        low = np.float32(rng.uniform(-scale, scale))
        middle = (Fraction(float(low)) + Fraction(float(np.nextafter(low, np.float32(1e38))))) / 2
        middle += Fraction(int(rng.integers(-1, 2)), 10 ** int(rng.integers(20, 40))) * abs(middle)
        with localcontext() as context:
            context.prec = 60
            texts.append(format(Decimal(middle.numerator) / Decimal(middle.denominator), "E"))
    return texts


def test_decimals_round_once_to_float32():
    texts = beside_midpoints(3000, seed=1)
    twice = sum(np.float32(float(t)) != nearest_float32(t) for t in texts)
    assert twice > 500  # the cases matter: through float64 alone these were wrong
    assert all(float32_of(t) == nearest_float32(t) for t in texts)


def model_file(tmp_path: Path, suffix: str) -> Path:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 6)
    path = tmp_path / f"m.{suffix}"
    booster.save_model(path)
    return path


def with_thresholds(path: Path, texts: list[str]) -> Path:
    """The JSON model at ``path`` with its split conditions written as ``texts`` (decimals beside
    float32 midpoints, as another program than XGBoost may write them), tree after tree."""
    document = json.loads(path.read_text())
    text = json.dumps(document)
    for tree in document["learner"]["gradient_booster"]["model"]["trees"]:
        listed = json.dumps(tree["split_conditions"])
        assert text.count(listed) == 1
        mine, texts = texts[: len(tree["split_conditions"])], texts[len(tree["split_conditions"]) :]
        assert sum(np.float32(float(t)) != nearest_float32(t) for t in mine)  # rounded twice
        text = text.replace(listed, "[" + ", ".join(mine) + "]")
    edited = path.with_name("edited.json")
    edited.write_text(text)
    return edited


def test_a_json_file_read_without_xgboost_has_the_thresholds_xgboost_holds(tmp_path):
    path = with_thresholds(model_file(tmp_path, "json"), beside_midpoints(100, seed=2))
    with_library = from_file(Ensemble, path)
    code = (
        "from pathlib import Path\n"
        "from veritas_dsl.model.ensemble import Ensemble\n"
        "from veritas_dsl.model.xgboost import from_file\n"
        f"m = from_file(Ensemble, Path({str(path)!r}))\n"
        "assert m.library is None\n"
        "print(m.threshold.astype('float32').view('uint32').tolist())\n"
    )
    done = hidden(code)
    assert done.returncode == 0, done.stderr
    # XGBoost's own serialisation decided the thresholds with the library (its fallback path).
    assert json.loads(done.stdout) == with_library.threshold.astype(np.float32).view(
        np.uint32
    ).tolist()


def test_ubjson_and_json_files_without_xgboost_are_the_model_xgboost_loads(tmp_path):
    for suffix in ("json", "ubj"):
        path = model_file(tmp_path, suffix)
        ours = from_file(Ensemble, path)
        code = (
            "import pickle, sys\n"
            "from pathlib import Path\n"
            "from veritas_dsl.model.ensemble import Ensemble\n"
            f"m = Ensemble.from_xgboost(Path({str(path)!r}))\n"
            "sys.stdout.buffer.write(pickle.dumps((m.library, m.threshold, m.value, "
            "m.base_score, m.feature, m.left, m.right)))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", HIDDEN + code], capture_output=True, cwd=ROOT, timeout=600
        )
        assert done.returncode == 0, done.stderr.decode()
        library, *arrays = pickle.loads(done.stdout)
        assert library is None
        mine = (ours.threshold, ours.value, ours.base_score, ours.feature, ours.left, ours.right)
        for theirs, own in zip(arrays, mine, strict=True):
            assert np.array_equal(theirs, own)


def answers(document: dict) -> list[tuple]:
    return [
        (r["query"], r["status"], r["lower"], r["upper"], json.dumps(r["witness"], sort_keys=True))
        for r in document["results"]
    ]


def test_the_fairness_example_runs_without_xgboost_with_the_same_answers():
    run = "from veritas_dsl.cli import main\nsys.exit(main(['run', 'examples/fairness.ver', '--json']))\n"
    done = hidden(run)
    assert done.returncode == 0, done.stderr
    plain = subprocess.run(
        [sys.executable, "-c", "import sys\n" + run], capture_output=True, text=True, cwd=ROOT,
        timeout=600,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert answers(json.loads(done.stdout)) == answers(json.loads(plain.stdout))


def test_a_model_in_memory_without_xgboost_names_the_extra():
    code = (
        "from veritas_dsl.model.ensemble import Ensemble\n"
        "from veritas_dsl.model.errors import ModelError\n"
        "try:\n"
        "    Ensemble.from_xgboost(object())\n"
        "except ModelError as error:\n"
        "    print(error)\n"
    )
    done = hidden(code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'veritas-dsl[xgboost]'" in done.stdout


@pytest.mark.parametrize("text", ["16777217.000000001", "16777216.999999999", "16777217"])
def test_a_decimal_at_a_midpoint_rounds_by_its_exact_value(text):
    assert float32_of(text) == nearest_float32(text)
    assert xgboost_document.base_values(f"[{text}]")[0] == nearest_float32(text)


def damaged(path: Path) -> dict[str, str]:
    """The JSON model at ``path`` cut in half, with half its trees dropped (``num_trees`` left as
    it was) and with a tree's ``left_children`` three short: name -> text."""
    raw = path.read_text()
    dropped = json.loads(raw)
    model = dropped["learner"]["gradient_booster"]["model"]
    model["trees"], model["tree_info"] = model["trees"][:10], model["tree_info"][:10]
    short = json.loads(raw)
    tree = short["learner"]["gradient_booster"]["model"]["trees"][3]
    tree["left_children"] = tree["left_children"][:-3]
    return {"half": raw[: len(raw) // 2], "dropped": json.dumps(dropped), "short": json.dumps(short)}


def test_damaged_files_without_xgboost_are_located_errors(tmp_path):
    # Without the library nothing checks the file but our reader: each damage is error V401 at
    # the model's declaration, exit 2, no traceback and nothing on standard output.
    spec = (ROOT / "examples" / "domains.ver").read_text()
    assert spec.count('"models/credit.json"') == 1
    files = {f"{name}.json": text for name, text in damaged(ROOT / "examples/models/credit.json").items()}
    whole = model_file(tmp_path, "ubj").read_bytes()
    for at in (len(whole) // 3, len(whole) // 2, len(whole) - 1):
        files[f"cut{at}.ubj"] = whole[:at]
    for name, content in files.items():
        model = tmp_path / name
        (model.write_text if isinstance(content, str) else model.write_bytes)(content)
        (tmp_path / "spec.ver").write_text(spec.replace("models/credit.json", name))
        done = hidden(
            "from veritas_dsl.cli import main\nsys.exit(main(['run', 'spec.ver', '--json']))\n",
            cwd=tmp_path,
        )
        assert done.returncode == 2, (name, done.stderr)
        assert "error[V401]" in done.stderr and " --> spec.ver:3:" in done.stderr, name
        assert "Traceback" not in done.stderr and done.stdout == "", name
