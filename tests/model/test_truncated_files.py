"""A model file cut short is refused, in every format, never loaded as a smaller model.

A LightGBM text model cut inside its third tree loaded as three trees of twenty, and `ver run`
verified it with exit 0. Every reader now checks that its file is whole (declared counts, sizes,
end markers), and a cut file is error V401 in a spec and a ``ModelError`` from the Python API.
Cut points are drawn by hypothesis (bounded: a few dozen per format), and the cuts at every line
end of the text formats, where a prefix is most likely to read as a whole file, are tried too.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_files import FORMATS, model_end, model_files

from veritas_dsl import parse
from veritas_dsl.diagnostics import SpecError
from veritas_dsl.model import load_model
from veritas_dsl.model.errors import ModelError

from conftest import examples

pytest.importorskip("skops.io", reason="skops is an optional importer")

#: Line-end cuts tried per text format, spread over the file.
LINE_CUTS = 120


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("cuts")


def load(name: str, data: bytes, folder):
    """The model in ``data`` through the Python API, and through a spec; both must agree."""
    format = FORMATS[name]
    path = folder / f"m{format.suffix}"
    path.write_bytes(data)
    try:
        model = load_model(path, format.kind, format.pickle, format.load_options())
    except ModelError as error:
        with pytest.raises(SpecError) as caught:
            spec = f"model m = {format.declaration(path.name)}\n"
            parse(spec, str(folder / "spec.ver"), trust_pickle=format.pickle)
        codes = [d.code for d in caught.value.diagnostics]
        assert codes == ["V401"], (codes, str(error))
        return None
    return model


def same(a, b) -> bool:
    arrays = ("feature", "threshold", "left", "right", "value", "tree_offsets", "base_score")
    return (
        all(np.array_equal(getattr(a, n), getattr(b, n)) for n in arrays)
        and a.feature_names == b.feature_names
        and a.task == b.task
    )


def check_cut(name: str, data: bytes, cut: int, folder, whole) -> None:
    model = load(name, data[:cut], folder)
    if cut < model_end(name, data):
        assert model is None, f"{name} cut at {cut} of {len(data)} loaded ({model.n_trees} trees)"
    else:  # only white space or LightGBM's trailer is gone
        assert model is not None and same(model, whole), (name, cut)


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_loads_whole(folder, name):
    assert load(name, model_files()[name], folder) is not None


@pytest.mark.parametrize("name", list(FORMATS))
@settings(
    max_examples=examples(1),
    deadline=None,
    derandomize=os.environ.get("HYPOTHESIS_PROFILE") == "ci",
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_file_cut_anywhere_is_refused(folder, name, data):
    original = model_files()[name]
    whole = load(name, original, folder)
    cut = data.draw(st.integers(0, len(original) - 1), label="cut")
    check_cut(name, original, cut, folder, whole)


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if not f.binary])
def test_a_text_file_cut_at_a_line_end_is_refused(folder, name):
    original = model_files()[name]
    whole = load(name, original, folder)
    ends = [i + 1 for i, byte in enumerate(original) if byte == ord("\n")]
    ends = [0, *ends[:: max(1, len(ends) // LINE_CUTS)]]
    if name == "lightgbm":  # its model ends inside the file: every line, and around the end
        end = model_end(name, original)
        ends = sorted({*ends, *range(end - 20, end + 20)})
    for cut in ends:
        if cut < len(original):
            check_cut(name, original, cut, folder, whole)


def _protobuf_fields(data: bytes) -> list[int]:
    """The offsets where each top-level field of a protobuf message ends: protobuf has no end
    marker, so a message cut there parses, without the fields after."""
    ends, at = [], 0

    def varint() -> int:
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        wire = varint() & 7
        if wire == 0:
            varint()
        elif wire == 2:
            size = varint()
            at += size
        else:
            at += 8 if wire == 1 else 4
        ends.append(at)
    return ends


def test_an_onnx_file_cut_between_its_fields_is_refused(folder):
    """The graph is one length-prefixed field, so a cut inside it never parses; a cut after it
    drops the opset imports, which the graph's nodes need. (One dropping only metadata would
    leave the same model: none here.)"""
    original = model_files()["onnx"]
    whole = load("onnx", original, folder)
    ends = _protobuf_fields(original)
    assert ends[-1] == len(original) and len(ends) > 3
    for cut in [0, *ends[:-1]]:
        check_cut("onnx", original, cut, folder, whole)
