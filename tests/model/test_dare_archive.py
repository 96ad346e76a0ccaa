"""A damaged `.dare` archive is a ModelError naming it, whatever part is damaged: the zip's
directory (a version, flags or a compression method zipfile does not support), the compressed
data, an array's header, or sizes that would not fit in memory. Byte flips of the example
forests found four kinds that escaped as internal errors: zlib's ``error``, NotImplementedError
("zip file version 11.9"), RuntimeError (a member marked encrypted) and tokenize's TokenError
(a damaged array header); and a header claiming a huge shape made numpy allocate it first.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.model import ModelError
from veritas_dsl.model.limits import MAX_BYTES
from veritas_dsl.unlearning import DareForest

FOREST = Path(__file__).resolve().parents[2] / "examples" / "models" / "unlearning.dare"


def _central(data: bytes) -> int:
    """Where the first member's record in the zip's central directory starts."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.start_dir


def _patched(offset_in_record: int, value: int, mask: bool = False) -> bytes:
    data = bytearray(FOREST.read_bytes())
    at = _central(data) + offset_in_record
    old = struct.unpack_from("<H", data, at)[0]
    struct.pack_into("<H", data, at, old | value if mask else value)
    return bytes(data)


def _npz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _npy_header(text: str) -> bytes:
    header = text.encode("latin-1")
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def _bad_deflate() -> bytes:
    """A saved forest whose first member's compressed data starts with a reserved block type."""
    data = bytearray(FOREST.read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        first = archive.infolist()[0]
    name_length, extra_length = struct.unpack_from("<HH", data, first.header_offset + 26)
    data[first.header_offset + 30 + name_length + extra_length] = 0xFF
    return bytes(data)


HUGE = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,)}"
DAMAGED = {
    "zip version": (_patched(6, 0x77), "zip file version 11.9"),
    "encrypted": (_patched(8, 0x1, mask=True), "encrypted"),
    "patched data": (_patched(8, 0x20, mask=True), "flag bit 5"),
    "strong encryption": (_patched(8, 0x40, mask=True), "flag bit 6"),
    "compression method": (_patched(10, 99), "compression method is not supported"),
    "deflate stream": (_bad_deflate(), "invalid block type"),
    "array header": (
        _npz({"header.npy": _npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3")}),
        "not a DaRE forest file",
    ),
    "huge shape": (  # numpy would allocate 4 TB before finding 8 bytes of data
        _npz({"X.npy": _npy_header(HUGE) + bytes(8)}),
        "claims more than it holds",
    ),
}


@pytest.mark.parametrize("damage", DAMAGED, ids=list(DAMAGED))
def test_a_damaged_archive_is_a_model_error_naming_it(tmp_path, damage):
    data, message = DAMAGED[damage]
    path = tmp_path / "forest.dare"
    path.write_bytes(data)
    with pytest.raises(ModelError, match=message) as error:
        DareForest.load(path)
    assert str(error.value).startswith(f"{path}: ")


def test_a_damaged_archive_in_a_spec_is_v401(tmp_path, capsys):
    (tmp_path / "forest.dare").write_bytes(DAMAGED["zip version"][0])
    (tmp_path / "s.ver").write_text('model f = dare "forest.dare"\n')
    assert main(["run", str(tmp_path / "s.ver")]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "error[V401]" in err and "zip file version 11.9" in err and "internal" not in err


def test_arrays_that_expand_beyond_the_limit_are_refused_before_reading(tmp_path, monkeypatch):
    # The file is small; what its directory says its arrays expand to is checked first.
    monkeypatch.setitem(MAX_BYTES, "dare", FOREST.stat().st_size + 1)
    with pytest.raises(ModelError, match=r"its arrays hold .* more than the .* allowed"):
        DareForest.load(FOREST)


FLIPS = st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=4
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flips=FLIPS)
def test_byte_flips_give_a_forest_or_a_model_error(tmp_path, flips):
    data = bytearray(FOREST.read_bytes())
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    path = tmp_path / "flipped.dare"
    path.write_bytes(bytes(data))
    try:
        forest = DareForest.load(path)
    except ModelError:
        return
    assert np.isfinite(forest.predict_proba(forest._X[:5])).all()
