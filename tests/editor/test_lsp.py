"""`ver lsp` driven through its protocol, in a subprocess: diagnostics as `ver run` reports them
(on open, on change, cleared once fixed), hover, completion, go-to-definition, formatting, a
model that fails to load as a diagnostic rather than a crash, an answer to every request, and
huge, deep or never-ending checks."""

from __future__ import annotations

import shutil

import pytest

from veritas_dsl import parse
from veritas_dsl.diagnostics import SpecError

from .corpus import ROOT
from .lsp_client import Client

pytest.importorskip("pygls", reason="the language server needs pygls (the lsp extra)")

GOOD = """model clf = xgboost "models/credit.json"
data test = csv "data/credit_test.csv"
const older = 60

query oldest {
    input x
    where x.age >= older
    maximize clf(x)
}
"""
TYPO = GOOD.replace("x.age >= older", "x.incme >= older")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lsp")
    (folder / "models").mkdir()
    (folder / "data").mkdir()
    shutil.copy(ROOT / "examples" / "models" / "credit.json", folder / "models")
    shutil.copy(ROOT / "examples" / "data" / "credit_test.csv", folder / "data")
    (folder / "models" / "broken.json").write_text('{"learner": {"gradient_booster": 3}}')
    return folder


@pytest.fixture(scope="module")
def client(folder):
    client = Client(folder)
    client.start(folder.as_uri())
    yield client
    assert client.stop() == 0


def open_file(client, path, text) -> str:
    uri = path.as_uri()
    path.write_text(text)
    item = {"uri": uri, "languageId": "ver", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})
    return uri


def change(client, uri, version, text) -> None:
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
    )


def at(params, line, character):
    return {**params, "position": {"line": line, "character": character}}


def test_a_diagnostic_as_ver_run_reports_it_then_cleared_once_fixed(client, folder):
    path = folder / "typo.ver"
    uri = open_file(client, path, TYPO)
    published = client.diagnostics(uri)
    with pytest.raises(SpecError) as caught:
        parse(TYPO, str(path))
    (expected,) = caught.value.diagnostics
    (diagnostic,) = published["diagnostics"]
    assert diagnostic["code"] == expected.code == "V204"
    assert diagnostic["range"] == {
        "start": {"line": 6, "character": 12},
        "end": {"line": 6, "character": 17},
    }
    assert (expected.span.line, expected.span.column, expected.span.end_column) == (7, 13, 18)
    assert f"help: {expected.help}" in diagnostic["message"] and "income" in expected.help
    # Several quick changes: one check, of the last version.
    change(client, uri, 2, TYPO.replace("incme", "inc"))
    change(client, uri, 3, GOOD)
    published = client.diagnostics(uri)
    assert published == {"uri": uri, "version": 3, "diagnostics": []}


def test_a_syntax_error_is_located(client, folder):
    uri = open_file(client, folder / "syntax.ver", GOOD.replace("x.age >= older", "x.age = 1"))
    (diagnostic,) = client.diagnostics(uri)["diagnostics"]
    assert diagnostic["code"] == "V101"
    assert diagnostic["range"]["start"] == {"line": 6, "character": 16}


def test_a_model_that_fails_to_load_is_a_diagnostic(client, folder):
    text = GOOD + 'model bad = xgboost "models/broken.json"\n'
    uri = open_file(client, folder / "bad_model.ver", text)
    (diagnostic,) = client.diagnostics(uri)["diagnostics"]
    assert diagnostic["code"] == "V401" and "cannot load model `bad`" in diagnostic["message"]
    assert diagnostic["range"]["start"] == {"line": 9, "character": 20}  # the quoted path
    # The server is still there, and still knows the models that loaded.
    hover = client.request("textDocument/hover", at({"textDocument": {"uri": uri}}, 7, 15))
    assert "trees" in hover["contents"]["value"]


def test_hover_completion_and_definition_answer_from_the_file(client, folder):
    uri = open_file(client, folder / "good.ver", GOOD)
    assert client.diagnostics(uri)["diagnostics"] == []
    document = {"textDocument": {"uri": uri}}
    model = client.request("textDocument/hover", at(document, 7, 15))["contents"]["value"]
    assert model.startswith("**model** `clf`: xgboost")
    assert "- trees: " in model and "- depth: " in model and "- outputs: 1" in model
    feature = client.request("textDocument/hover", at(document, 6, 13))["contents"]["value"]
    assert feature.startswith("**feature** `age`: real")
    assert "`clf`: " in feature and " splits, " in feature and " thresholds in [" in feature
    data = client.request("textDocument/hover", at(document, 1, 6))["contents"]["value"]
    assert data.startswith("**data** `test`: ") and " rows, 8 columns" in data
    const = client.request("textDocument/hover", at(document, 6, 20))["contents"]["value"]
    assert const == "**const** `older` = 60"
    assert client.request("textDocument/hover", at(document, 4, 1)) is None  # a keyword

    items = client.request("textDocument/completion", at(document, 7, 12))["items"]
    labels = {item["label"]: item["detail"] for item in items}
    assert labels["clf"] == "model" and labels["test"] == "data" and labels["older"] == "const"
    assert labels["age"] == "feature" and labels["astar"] == "engine"
    assert labels["maximize"] == "keyword" and labels["oldest"] == "query"
    assert labels["catboost"] == labels["onnx"] == labels["csv"] == "format"
    after_dot = client.request("textDocument/completion", at(document, 6, 12))["items"]
    assert {item["label"] for item in after_dot} == {
        "age", "income", "debt", "sex", "housing_own", "housing_rent", "housing_free",
    }  # fmt: skip

    location = client.request("textDocument/definition", at(document, 7, 14))
    assert location == {
        "uri": uri,
        "range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 9}},
    }
    older = client.request("textDocument/definition", at(document, 6, 21))
    assert older["range"]["start"] == {"line": 2, "character": 6}


def formatting(uri: str) -> dict:
    return {"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}}


def test_formatting_returns_the_canonical_layout(client, folder):
    uri = open_file(client, folder / "messy.ver", GOOD.replace("    input x", "input   x"))
    client.diagnostics(uri)
    edits = client.request("textDocument/formatting", formatting(uri))
    assert [edit["newText"] for edit in edits] == [GOOD]
    # A document the editor has not opened is not read from disk (it could block: a FIFO).
    closed = folder / "closed.ver"
    closed.write_text(GOOD.replace("    input x", "input   x"))
    assert client.request("textDocument/formatting", formatting(closed.as_uri())) == []


_POSITIONS = {"(-1,-1)": (-1, -1), "(3,-5)": (3, -5), "(2^40,2^40)": (2**40, 2**40)}
BAD_PARAMS = {
    "hover {}": ("textDocument/hover", lambda uri: {}),
    "hover uri 42": (
        "textDocument/hover",
        lambda uri: {"textDocument": {"uri": 42}, "position": {"line": 0, "character": 0}},
    ),
    "hover textDocument a string": (
        "textDocument/hover",
        lambda uri: {"textDocument": uri, "position": {"line": 0, "character": 0}},
    ),
    "hover no position": ("textDocument/hover", lambda uri: {"textDocument": {"uri": uri}}),
    **{
        f"{method} {name}": (
            f"textDocument/{method}",
            lambda uri, p=p: at({"textDocument": {"uri": uri}}, *p),
        )
        for method in ("hover", "completion", "definition")
        for name, p in _POSITIONS.items()
    },
}


@pytest.mark.parametrize("case", BAD_PARAMS)
def test_a_request_with_bad_params_is_answered_invalid_params(client, folder, case):
    """JSON-RPC's InvalidParams (-32602), saying what is wrong; pygls once dropped these, and
    the client waited for ever."""
    uri = open_file(client, folder / "bad_params.ver", GOOD)
    client.diagnostics(uri)
    method, params = BAD_PARAMS[case]
    reply = client.call(method, params(uri))
    assert reply["error"]["code"] == -32602, reply
    assert " @ $.params." in reply["error"]["message"]
    # The server goes on: a good request of the same method is answered.
    assert "error" not in client.call(method, at({"textDocument": {"uri": uri}}, 7, 15))


def test_positions_beyond_the_text_and_unknown_documents_answer_nothing(client, folder):
    uri = open_file(client, folder / "far.ver", GOOD)
    client.diagnostics(uri)
    for document in ({"uri": uri}, {"uri": (folder / "never_opened.ver").as_uri()}):
        for line, character in ((2**31 - 1, 2**31 - 1), (7, 2**31 - 1), (2**31 - 1, 0)):
            params = at({"textDocument": document}, line, character)
            assert client.request("textDocument/hover", params) is None
            assert client.request("textDocument/definition", params) is None
            client.request("textDocument/completion", params)


def test_huge_and_deep_documents_get_diagnostics(client, folder):
    """A 2.4 MB spec of 40,000 queries and a 5 MB comment: one V002 at once, instead of no
    answer for minutes; 20,000 parentheses are fine (they cost no depth), 20,000 `not`s V103."""
    queries = "".join(
        f"query q{i} {{ input x  where x.age >= {i % 90}  maximize clf(x) }}\n"
        for i in range(40_000)
    )
    comment = "# " + "x" * 5_000_000 + "\n"
    for name, text in (("many.ver", GOOD + queries), ("comment.ver", comment + GOOD)):
        uri = open_file(client, folder / name, text)
        (diagnostic,) = client.diagnostics(uri)["diagnostics"]
        assert diagnostic["code"] == "V002" and diagnostic["severity"] == 2  # a warning
        assert diagnostic["message"].startswith("file too large for live checking\n")
        assert "help: run `ver check`" in diagnostic["message"]
        reply = client.call("textDocument/formatting", formatting(uri))
        assert reply["error"]["code"] == -32803 and "run `ver fmt`" in reply["error"]["message"]
    n = 20_000
    parentheses = GOOD.replace("x.age >= older", "(" * n + "x.age" + ")" * n + " >= older")
    uri = open_file(client, folder / "parentheses.ver", parentheses)
    assert client.diagnostics(uri)["diagnostics"] == []
    nots = GOOD.replace("x.age >= older", "not " * n + "x.age >= older")
    uri = open_file(client, folder / "nots.ver", nots)
    (diagnostic,) = client.diagnostics(uri)["diagnostics"]
    assert diagnostic["code"] == "V103"
    assert diagnostic["range"]["start"]["line"] == 6


def test_exit_ends_the_server_while_a_check_never_ends(folder):
    """A check that never returns (here: the analysis patched to wait for ever) must not keep
    the process alive after `exit`, nor stop the server from answering or formatting meanwhile;
    after `shutdown` a request is answered InvalidRequest, as the protocol says."""
    never = "import threading, veritas_dsl.editor.server as s\n"
    never += "s.analyse = lambda *args: threading.Event().wait()"
    client = Client(folder, prelude=never)
    try:
        client.start(folder.as_uri())
        uri = open_file(client, folder / "never.ver", GOOD)
        params = at({"textDocument": {"uri": uri}}, 7, 15)
        assert client.request("textDocument/hover", params) is None  # not checked yet
        assert client.request("textDocument/formatting", formatting(uri)) == []  # apart
        client.request("shutdown", None)
        assert client.call("textDocument/hover", params)["error"]["code"] == -32600
        client.notify("exit", None)
        assert client.process.wait(timeout=60) == 0  # it never ended at all
    finally:
        client.close()


def test_a_document_closed_while_its_check_waits_is_not_checked_from_disk(client, folder):
    path = folder / "closing.ver"
    uri = open_file(client, path, GOOD)
    assert client.diagnostics(uri)["diagnostics"] == []
    path.write_text(TYPO)  # the editor never saved this: only the disk has it
    change(client, uri, 2, GOOD.replace("older", "older "))  # a check waits 0.3 s
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri)["diagnostics"] == []  # cleared on close
    # A marker: a change of another document, waiting as long, after the close. The server
    # wakes its checks in the order they are due and runs them one at a time, in order, so a
    # check of the closed document would publish before the marker's, on any machine.
    seen = []

    def record(message) -> bool:
        seen.append(message)
        params = message.get("params", {})
        return message.get("method") == "textDocument/publishDiagnostics" and (
            params["uri"] == marker and params.get("version") == 2
        )

    marker = open_file(client, folder / "marker.ver", GOOD)
    change(client, marker, 2, GOOD.replace("older", "older "))
    client.wait(record)
    assert not [m for m in seen if m.get("params", {}).get("uri") == uri]
