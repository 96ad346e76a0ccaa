"""A reader for the UBJSON subset XGBoost writes (``.ubj`` files, ``Booster.save_raw("ubj")``).

UBJSON stores thresholds and leaf values as binary float32, so they arrive exactly: a booster in
memory is read from it, and a JSON file whose decimal numbers Python rounds otherwise than XGBoost
(see :mod:`veritas_dsl.model.xgboost`). No maintained UBJSON package exists on PyPI (py-ubjson's
last release is from 2020), and the format is small.
"""

from __future__ import annotations

import numpy as np

_SCALARS = {
    b"i": (">i1", 1),
    b"U": (">u1", 1),
    b"I": (">i2", 2),
    b"l": (">i4", 4),
    b"L": (">i8", 8),
    b"d": (">f4", 4),
    b"D": (">f8", 8),
}


class UBJSONError(ValueError):
    """The bytes are not UBJSON of the kind XGBoost writes."""


def loads(data: bytes) -> object:
    """Decode one UBJSON value. Typed numeric arrays become numpy arrays of their own dtype."""
    reader = _Reader(memoryview(bytes(data)))
    try:
        value = reader.value()
    except RecursionError:
        raise UBJSONError("containers nested too deeply") from None
    except UnicodeDecodeError as error:
        raise UBJSONError(f"a string is not UTF-8 ({error.reason})") from None
    if reader.pos != len(reader.data):
        raise UBJSONError(f"trailing bytes after the value at offset {reader.pos}")
    return value


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise UBJSONError("unexpected end of data")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def marker(self) -> bytes:
        byte = bytes(self.take(1))
        while byte == b"N":  # no-op padding
            byte = bytes(self.take(1))
        return byte

    def value(self, marker: bytes | None = None) -> object:
        marker = marker or self.marker()
        if marker in _SCALARS:
            dtype, size = _SCALARS[marker]
            return np.frombuffer(self.take(size), dtype=dtype)[0].item()
        if marker == b"S":
            return self.string()
        if marker == b"C":
            return bytes(self.take(1)).decode("latin-1")
        if marker == b"T":
            return True
        if marker == b"F":
            return False
        if marker == b"Z":
            return None
        if marker == b"[":
            return self.array()
        if marker == b"{":
            return self.object()
        raise UBJSONError(f"unknown marker {marker!r} at offset {self.pos - 1}")

    def length(self) -> int:
        n = self.value()
        if not isinstance(n, int) or n < 0:
            raise UBJSONError(f"bad length at offset {self.pos}")
        return n

    def string(self) -> str:
        return bytes(self.take(self.length())).decode("utf-8")

    def container_header(self) -> tuple[bytes | None, int | None]:
        kind = count = None
        marker = self.marker()
        if marker == b"$":
            kind = bytes(self.take(1))
            marker = self.marker()
            if marker != b"#":
                raise UBJSONError("a typed container must give its count")
            if kind in (b"Z", b"T", b"F", b"N"):
                # Elements of no size: a corrupt count would loop without reading anything.
                raise UBJSONError(f"a container typed {kind!r} is not supported")
        if marker == b"#":
            count = self.length()
            if count > len(self.data) - self.pos:
                raise UBJSONError(f"a count of {count} is more than the bytes left")
        else:
            self.pos -= 1
        return kind, count

    def array(self) -> object:
        kind, count = self.container_header()
        if kind in _SCALARS and count is not None:
            dtype, size = _SCALARS[kind]
            raw = self.take(size * count)
            return np.frombuffer(raw, dtype=dtype).astype(np.dtype(dtype).newbyteorder("="))
        items = []
        if count is not None:
            for _ in range(count):
                items.append(self.value(kind))
            return items
        while (marker := self.marker()) != b"]":
            items.append(self.value(marker))
        return items

    def object(self) -> dict[str, object]:
        kind, count = self.container_header()
        result: dict[str, object] = {}
        if count is not None:
            for _ in range(count):
                key = self.key(result)
                result[key] = self.value(kind)
            return result
        while True:
            marker = self.marker()
            if marker == b"}":
                return result
            self.pos -= 1
            key = self.key(result)
            result[key] = self.value()

    def key(self, seen: dict[str, object]) -> str:
        # XGBoost keeps the first of two equal keys, a dict the last: a file holding one twice
        # would be checked on one value and loaded with the other. XGBoost writes none.
        at = self.pos
        key = self.string()
        if key in seen:
            raise UBJSONError(f"the key {key[:40]!r} at offset {at} appears twice in one object")
        return key
