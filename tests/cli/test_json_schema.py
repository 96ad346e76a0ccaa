"""Every JSON document `ver` prints says its version (``"schema": 1``) and validates against the
JSON Schema files shipped in the package (veritas_dsl/report/schema/), on the output of every
shipped example: `ver run --json` and `--jsonl`, `ver check --json`, `ver leakage --json` and
`ver inspect --json`. The examples run once per module, with a short time limit: the shape of a
document does not depend on the verdicts."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
from importlib.metadata import version

import pytest
from jsonschema import Draft202012Validator
from lang.specs import EXAMPLES, example_files
from schema_files import FOLDER, NAMES, load, problems

from veritas_dsl import arguments, cli
from veritas_dsl.outcome import KINDS, Verdict
from veritas_dsl.report.json import SCHEMA
from veritas_dsl.result import Solution, Termination
from veritas_dsl.unlearning.leakage import Extreme

#: Short: only the documents' shape is checked.
TIMEOUT = "1"


def ver(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[dict, list[dict]]]:
    """Per example: its `ver run --json` document and its `--jsonl` lines."""
    folder = tmp_path_factory.mktemp("jsonl")
    found = {}
    for path in example_files():
        lines = folder / f"{path.stem}.jsonl"
        code, out = ver("run", str(path), "--json", "--timeout", TIMEOUT, "--jobs", "1",
                        "--jsonl", str(lines))
        assert code in (0, 1), (path.name, code)
        found[path.stem] = (json.loads(out), [json.loads(t) for t in lines.read_text().splitlines()])
    return found


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_ver_run_json_of_every_example_validates(runs, path):
    document, lines = runs[path.stem]
    assert document["schema"] == SCHEMA == 1
    assert problems(document, "run.schema.json") == []
    assert len(lines) == len(document["results"])
    for line in lines:
        assert problems(line, "run.schema.json#/$defs/line") == []


def test_ver_check_json_of_every_example_validates():
    code, out = ver("check", str(EXAMPLES), "--json", "--timeout", TIMEOUT, "--jobs", "1")
    document = json.loads(out)
    assert code in (0, 1)
    assert len({entry["file"] for entry in document["checks"]}) > 1
    assert document["schema"] == SCHEMA
    assert problems(document, "check.schema.json") == []


def test_ver_check_json_of_a_spec_error_validates(tmp_path):
    bad = tmp_path / "bad.ver"
    bad.write_text("model m = xgboost 'missing.json'\n")
    code, out = ver("check", str(bad), "--json")
    document = json.loads(out)
    assert code == 2
    assert document["checks"][0]["verdict"] == "error"
    assert problems(document, "check.schema.json") == []


@pytest.mark.parametrize(
    "argv",
    [
        [str(EXAMPLES / "unlearning.ver")],
        [str(EXAMPLES / "models" / "unlearning.dare"), "--delete", "3,17"],
    ],
    ids=["spec", "saved forest"],
)
def test_ver_leakage_json_validates(argv):
    code, out = ver("leakage", *argv, "--json", "--timeout", TIMEOUT)
    document = json.loads(out)
    assert code == 0
    assert document["schema"] == SCHEMA
    assert problems(document, "leakage.schema.json") == []


def test_an_open_leakage_bound_is_standard_json():
    # No `-Infinity` (not JSON) when a limit leaves an extreme without a bound.
    open_bounds = Extreme(-math.inf, math.inf, Termination.INTERRUPTED.value).to_dict()
    json.dumps(open_bounds, allow_nan=False)
    assert problems(open_bounds, "leakage.schema.json#/$defs/extreme") == []


@pytest.mark.parametrize(
    "model",
    sorted(p for p in (EXAMPLES / "models").iterdir() if p.suffix in (".json", ".dare", ".onnx")),
    ids=lambda p: p.name,
)
def test_ver_inspect_json_validates(model):
    code, out = ver("inspect", str(model), "--json")
    document = json.loads(out)
    assert code == 0
    assert document["schema"] == SCHEMA
    assert problems(document, "inspect.schema.json") == []


def test_the_schema_names_every_value_the_code_writes():
    # An enum of the schema is the code's, not a copy that drifts from it.
    answer = load("run")["$defs"]["answer"]["properties"]
    assert set(answer["status"]["enum"]) == {t.value for t in Termination}
    assert set(answer["solution"]["enum"]) == {s.value for s in Solution}
    assert set(load("run")["$defs"]["check"]["properties"]["verdict"]["enum"]) == {
        v.value for v in Verdict
    }
    kinds = set(load("run")["$defs"]["entry"]["properties"]["kind"]["enum"])
    assert kinds == set(KINDS.values())
    for name in NAMES:
        assert f'"const": {SCHEMA}' in (FOLDER / f"{name}.schema.json").read_text()


def test_the_schema_refuses_a_field_it_does_not_describe(runs):
    document, _ = runs["closest"]
    renamed = {**document, "result": document["results"]}
    assert problems(renamed, "run.schema.json")


def test_the_schema_files_are_valid_json_schema():
    for name in NAMES:
        Draft202012Validator.check_schema(load(name))


def test_ver_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"ver {version('veritas-dsl')}\n"


def test_every_command_with_json_has_its_schema_file():
    (commands,) = [
        a for a in arguments.parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    with_json = {
        name
        for name, command in commands.choices.items()
        if any("--json" in a.option_strings for a in command._actions)
    }
    assert with_json == set(NAMES)


def test_the_n_best_solutions_validate(tmp_path):
    spec = tmp_path / "best.ver"
    model = EXAMPLES / "models" / "credit.json"
    spec.write_text(
        f'model clf = xgboost "{model}"\nquery top {{\n    input x\n    maximize clf(x)\n'
        "    solve with astar(solutions = 3)\n}\n"
    )
    code, out = ver("run", str(spec), "--json")
    document = json.loads(out)
    assert code == 0 and len(document["results"][0]["solutions"]) == 3
    assert problems(document, "run.schema.json") == []
