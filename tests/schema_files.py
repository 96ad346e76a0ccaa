"""The JSON Schema files shipped in the package, and a validator of documents against them."""

from __future__ import annotations

import json
from importlib.resources import files

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

#: Where an installed package keeps the schema files (package data, not the source tree).
FOLDER = files("veritas_dsl.report") / "schema"
NAMES = ("run", "check", "inspect", "leakage", "membership", "cap")


def load(name: str) -> dict:
    return json.loads((FOLDER / f"{name}.schema.json").read_text())


#: The files refer to each other by file name (``run.schema.json#/$defs/witness``), as they
#: would for any validator that reads them side by side.
REGISTRY = Registry().with_resources(
    (f"{name}.schema.json", Resource.from_contents(load(name))) for name in NAMES
)


def problems(document, reference: str) -> list[str]:
    """What makes ``document`` break the schema at ``reference`` (``run.schema.json``, or a
    definition in it): the path of each error and its message."""
    validator = Draft202012Validator({"$ref": reference}, registry=REGISTRY)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]
