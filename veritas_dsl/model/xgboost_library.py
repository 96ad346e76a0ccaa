"""XGBoost's own C library, called directly: load a model from its bytes, write it back, predict
margins.

Why not the ``xgboost`` Python package: importing it imports scikit-learn and SciPy when they
are installed (``xgboost.compat``), 0.2 s of CPU without scikit-learn and 0.9 s with it, in
every process that validates a witness of an XGBoost model: more than a small spec costs
(``bench/spec_overhead.py``, ``bench/cold_start.py``). The package is itself a thin ctypes
wrapper of the same library; these are the calls it makes for ``Booster(model_file=...)``,
``save_raw("ubj")``, ``set_param`` and ``predict(DMatrix(X), output_margin=True)``
(``xgboost/c_api.h``), so the witnesses are still evaluated by XGBoost's code, not ours. The
library file is found as the package finds it (its ``libpath.py``, read without importing the
package).

XGBoost's log messages (warnings about old model files) go nowhere: the package would print
them on stdout, which belongs to ``--json``. Where the package was imported first, its own
handler stays (the library is one per process, and so is its handler).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import math
import sys
import weakref
from pathlib import Path

import numpy as np

_u64 = ctypes.c_uint64


#: How to install XGBoost, for messages.
INSTALL = "pip install 'veritas-dsl[xgboost]'"


class XGBoostLibraryError(Exception):
    """A call into XGBoost's library failed; the message is XGBoost's."""


def installed() -> bool:
    """Whether the ``xgboost`` package is there (found, not imported)."""
    try:
        spec = importlib.util.find_spec("xgboost")
    except ValueError:  # a module without a spec stands in for it
        return False
    return spec is not None and bool(spec.submodule_search_locations)


@functools.cache
def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(_library_path())
    lib.XGBGetLastError.restype = ctypes.c_char_p
    if "xgboost.core" not in sys.modules:
        lib.XGBRegisterLogCallback(_QUIET)
    return lib


def _library_path() -> str:
    spec = importlib.util.find_spec("xgboost")
    if spec is None or not spec.submodule_search_locations:
        raise XGBoostLibraryError(f"XGBoost is not installed ({INSTALL})")
    folder = Path(next(iter(spec.submodule_search_locations)))
    where = importlib.util.spec_from_file_location("_xgboost_libpath", folder / "libpath.py")
    if where is None or where.loader is None:
        raise XGBoostLibraryError(f"cannot find XGBoost's library in {folder}")
    libpath = importlib.util.module_from_spec(where)
    where.loader.exec_module(libpath)  # os, platform and sys only: no package import
    try:
        return libpath.find_lib_path()[0]
    except Exception as error:  # XGBoostLibraryNotFound, an empty list
        raise XGBoostLibraryError(f"cannot find XGBoost's library ({error})") from None


_QUIET = ctypes.CFUNCTYPE(None, ctypes.c_char_p)(lambda message: None)


def _check(status: int) -> None:
    if status != 0:
        message = _library().XGBGetLastError() or b"unknown error"
        raise XGBoostLibraryError(message.decode("utf-8", "replace"))


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


class Booster:
    """A model held by XGBoost's library, loaded from the bytes of a model file (JSON or
    UBJSON). Predicting is thread-safe; setting a parameter is not, so set them first."""

    def __init__(self, data: bytes) -> None:
        lib = _library()
        self._handle = ctypes.c_void_p()
        _check(lib.XGBoosterCreate(None, _u64(0), ctypes.byref(self._handle)))
        weakref.finalize(self, lib.XGBoosterFree, self._handle)
        _check(lib.XGBoosterLoadModelFromBuffer(self._handle, data, _u64(len(data))))
        self._data = data

    def copy(self) -> Booster:
        """Another booster of the same model (its parameters not copied)."""
        return Booster(self._data)

    def set_param(self, name: str, value: object) -> None:
        _check(_library().XGBoosterSetParam(self._handle, name.encode(), str(value).encode()))

    def save_ubj(self) -> bytes:
        """The model as XGBoost writes it in UBJSON (``save_raw("ubj")``)."""
        length, pointer = _u64(), ctypes.c_char_p()
        config = _json({"format": "ubj"})
        _check(
            _library().XGBoosterSaveModelToBuffer(
                self._handle, config, ctypes.byref(length), ctypes.byref(pointer)
            )
        )
        return ctypes.string_at(pointer, length.value)

    def margins(self, X: np.ndarray, iteration_end: int = 0, nthread: int = 0) -> np.ndarray:
        """The raw margins of the rows of ``X`` (float32, shape ``(n, n_features)``), of the
        trees of iterations ``[0, iteration_end)`` (0: all), on ``nthread`` threads (0: all);
        shape ``(n,)`` or ``(n, n_outputs)`` as XGBoost gives it."""
        lib = _library()
        X = np.ascontiguousarray(X, dtype=np.float32)
        interface = {
            "data": [X.ctypes.data, True],
            "shape": list(X.shape),
            "strides": None,
            "typestr": "<f4",
            "version": 3,
        }
        matrix = ctypes.c_void_p()
        config = _json({"missing": math.nan, "nthread": nthread})
        _check(lib.XGDMatrixCreateFromDense(_json(interface), config, ctypes.byref(matrix)))
        try:
            shape, dims = ctypes.POINTER(_u64)(), _u64()
            result = ctypes.POINTER(ctypes.c_float)()
            predict = {
                "type": 1,  # the margin
                "training": False,
                "iteration_begin": 0,
                "iteration_end": int(iteration_end),
                "strict_shape": False,
            }
            _check(
                lib.XGBoosterPredictFromDMatrix(
                    self._handle, matrix, _json(predict), ctypes.byref(shape),
                    ctypes.byref(dims), ctypes.byref(result),
                )
            )  # fmt: skip
            size = tuple(int(shape[i]) for i in range(dims.value))
            n = math.prod(size)
            # XGBoost owns the buffer until its next call on this thread: copy it now.
            return np.ctypeslib.as_array(result, shape=(n,)).copy().reshape(size)
        finally:
            _check(lib.XGDMatrixFree(matrix))
