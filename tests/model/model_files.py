"""One small model file of every format the project reads, as bytes, and where its model ends.

For the tests that cut or corrupt model files: each entry says how a spec declares the file and
whether loading it needs ``trust_pickle``.
"""

from __future__ import annotations

import functools
import io
import json
import pickle
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
CREDIT = MODELS / "credit.json"
#: How LightGBM closes its trees; what follows (feature importances, the training parameters)
#: is not part of the model and is never read.
LIGHTGBM_END = b"end of trees"


@dataclass(frozen=True)
class Format:
    suffix: str
    kind: str  # the format name of a `model` declaration
    options: str = ""  # the declaration's options, as written in a spec
    binary: bool = False
    pickle: bool = False

    def declaration(self, path: str) -> str:
        return f'{self.kind} "{path}"' + (f" ({self.options})" if self.options else "")

    def load_options(self) -> dict[str, float] | None:
        return {"features": 7} if self.kind == "xgboost_dump" else None


FORMATS = {
    "xgboost_json": Format(".json", "xgboost"),
    "xgboost_ubj": Format(".ubj", "xgboost", binary=True),
    "xgboost_dump": Format(".json", "xgboost_dump", "features = 7"),
    "lightgbm": Format(".txt", "lightgbm"),
    "ensemble": Format(".json", "ensemble"),
    "skops": Format(".skops", "sklearn", binary=True),
    "pickle": Format(".pkl", "sklearn", binary=True, pickle=True),
    "joblib": Format(".joblib", "sklearn", binary=True, pickle=True),
    "catboost": Format(".json", "catboost"),
    "onnx": Format(".onnx", "onnx", binary=True),
    "dare": Format(".dare", "dare", binary=True),
}


def model_end(name: str, data: bytes) -> int:
    """The length of the model part of ``data``: a cut anywhere before it must be refused. It is
    the whole file, but a text file's trailing white space and LightGBM's trailer."""
    if name == "lightgbm":
        return data.index(LIGHTGBM_END) + len(LIGHTGBM_END)
    return len(data) if FORMATS[name].binary else len(data.rstrip())


@functools.cache
def model_files() -> dict[str, bytes]:
    """The bytes of a small model of each format of :data:`FORMATS` (made once)."""
    import xgboost

    from veritas_dsl.model import load_model

    with tempfile.TemporaryDirectory() as folder:
        load_model(CREDIT).save(Path(folder) / "ensemble.json")
        ensemble = (Path(folder) / "ensemble.json").read_bytes()
    forest = _forest()
    return {
        "xgboost_json": CREDIT.read_bytes(),
        "xgboost_ubj": bytes(xgboost.Booster(model_file=str(CREDIT)).save_raw("ubj")),
        "xgboost_dump": _xgboost_dump(),
        "lightgbm": _lightgbm(),
        "ensemble": ensemble,
        "skops": _skops(forest),
        "pickle": pickle.dumps(forest),
        "joblib": _joblib(forest),
        "catboost": (MODELS / "credit_catboost.json").read_bytes(),
        "onnx": (MODELS / "scaled.onnx").read_bytes(),
        "dare": (MODELS / "unlearning.dare").read_bytes(),
    }


def _forest():
    from sklearn.ensemble import RandomForestClassifier

    X = np.random.default_rng(0).normal(size=(200, 4))
    forest = RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0)
    return forest.fit(X, X[:, 0] > 0)


def _xgboost_dump() -> bytes:
    """The credit model as the literature ships dumps: features split on by integer id."""
    import xgboost

    booster = xgboost.Booster(model_file=str(CREDIT))
    booster.feature_names = None
    trees = [json.loads(tree) for tree in booster.get_dump(dump_format="json")]
    return re.sub(r'"split": "f(\d+)"', r'"split": \1', json.dumps(trees, indent=1)).encode()


def _lightgbm() -> bytes:
    import lightgbm

    X = np.random.default_rng(0).normal(size=(300, 4))
    params = {"objective": "binary", "num_leaves": 6, "verbose": -1, "num_threads": 1, "seed": 0}
    booster = lightgbm.train(params, lightgbm.Dataset(X, X[:, 0] + X[:, 1] > 0), 6)
    return booster.model_to_string().encode()


def _skops(forest) -> bytes:
    """A skops file, its zip timestamps fixed so that the bytes are too."""
    import skops.io

    fixed = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(skops.io.dumps(forest))) as source,
        zipfile.ZipFile(fixed, "w") as target,
    ):
        for info in sorted(source.infolist(), key=lambda i: i.filename):
            target.writestr(
                zipfile.ZipInfo(info.filename, (2020, 1, 1, 0, 0, 0)), source.read(info)
            )
    return fixed.getvalue()


def _joblib(forest) -> bytes:
    import joblib

    buffer = io.BytesIO()
    joblib.dump(forest, buffer)
    return buffer.getvalue()
