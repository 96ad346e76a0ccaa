"""The parser's LALR tables, built once per grammar and Lark version and kept in the user's cache
directory (:mod:`veritas_dsl.cache_dir`) as JSON.

Why: building the parser from ``grammar/ver.lark`` costs 50-80 ms of CPU in every process (every
``ver`` command, pytest session and editor start), reading its tables back about 5 ms. Lark's own
cache (``Lark(cache=True)``) is a pickle in the shared temporary directory, which whoever can
write there could make run code; these are JSON, which loads no code. A file that is missing,
unreadable or not what Lark accepts is built again (and rewritten), so a stale or damaged cache
costs time, never a wrong parse: its name holds a digest of the grammar, the options and Lark's
version, and it is written whole or not at all (a temporary file renamed).

Lark's tables are dicts with integer keys and tuples, which JSON has not: they are written as
``{"\\u0000dict": [[key, value], ...]}`` and ``{"\\u0000tuple": [...]}`` and read back as they were.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from veritas_dsl.cache_dir import writable

_DICT, _TUPLE = "\0dict", "\0tuple"


def cached_lark(grammar: str, folder: str | None = None, **options) -> Lark:
    """``Lark(grammar, **options)``, its tables read from ``folder`` (by default the user's
    cache directory) when they were kept there, and kept there otherwise. Options that are
    functions (``lexer_callbacks``) are not part of the tables and are passed on as given."""
    callbacks = {k: options.pop(k) for k in ("lexer_callbacks",) if k in options}
    key = json.dumps([grammar, sorted(options.items()), lark.__version__]).encode()
    where = writable(folder)
    name = f"lark-{hashlib.sha256(key).hexdigest()[:20]}.json"
    path = None if where is None else Path(where) / name
    if path is not None:
        try:
            data, memo = json.loads(path.read_text(), object_hook=_decoded)
            return Lark._load_from_dict(data, memo, **callbacks)
        except Exception:  # missing, damaged, or from another Lark: built again below
            pass
    parser = Lark(grammar, **options, **callbacks)
    if path is not None:
        _keep(path, parser)
    return parser


def _keep(path: Path, parser: Lark) -> None:
    """Write ``parser``'s tables to ``path``, whole or not at all; a failure only costs time."""
    try:
        text = json.dumps(_encoded(list(parser.memo_serialize([TerminalDef, Rule]))))
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".lark-", suffix=".tmp")
    except (OSError, TypeError):  # TypeError: a Lark whose tables hold what JSON cannot
        return
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _encoded(value: object) -> object:
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("\0") for k in value):
            return {k: _encoded(v) for k, v in value.items()}
        return {_DICT: [[_encoded(k), _encoded(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {_TUPLE: [_encoded(v) for v in value]}
    if isinstance(value, list):
        return [_encoded(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot keep {type(value).__name__} in the parser's tables")


def _decoded(value: dict) -> object:
    """Called on every JSON object, innermost first: a tuple key is a tuple by now."""
    if _DICT in value:
        return dict(value[_DICT])
    if _TUPLE in value:
        return tuple(value[_TUPLE])
    return value
