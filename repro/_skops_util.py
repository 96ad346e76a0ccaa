"""Helpers for the repro scripts: rewrite a real skops file's schema.json (files under /tmp)."""
import io
import json
import zipfile


def unpack(data: bytes):
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    return json.loads(files.pop("schema.json")), files


def pack(path, schema, files):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("schema.json", json.dumps(schema))
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def find(node, pred, out=None):
    """Every dict node in the schema for which pred(node) holds."""
    out = [] if out is None else out
    if isinstance(node, dict):
        if pred(node):
            out.append(node)
        for v in node.values():
            find(v, pred, out)
    elif isinstance(node, list):
        for v in node:
            find(v, pred, out)
    return out
