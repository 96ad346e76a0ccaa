"""A skops file runs no code of its choosing, on any route that reads it.

skops rebuilds an object by calling the types a file names, with arguments from the file; trust
decides which. A hand-written file (a zip of JSON, no pickle inside) naming numpy's ``runstring``
(which ``exec``s a string) once created a marker file from ``ver run``, ``ver check``,
``ver inspect``, the pytest plugin, ``veritas_dsl.load`` and ``ver lsp`` on opening the spec:
every type whose name began with ``sklearn.`` or ``numpy.`` was trusted. Each route must now
refuse the file, naming the type, before anything is called.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from veritas_dsl import load
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.diagnostics import SpecError
from veritas_dsl.model import load_model
from veritas_dsl.model.errors import ModelError

skops_io = pytest.importorskip("skops.io", reason="skops is an optional importer")

RUNSTRING = "numpy.testing._private.utils.runstring"


def _json(value) -> dict:
    return {
        "__class__": "str",
        "__module__": "builtins",
        "__loader__": "JsonNode",
        "content": json.dumps(value),
        "is_json": True,
    }


def _empty_dict() -> dict:
    empty = {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode", "content": []}
    return {
        "__class__": "dict",
        "__module__": "builtins",
        "__loader__": "DictNode",
        "content": {},
        "key_types": empty,
    }


def _call(module_and_name: str, loader: str, code: str) -> dict:
    """A node that makes skops call ``module_and_name(code, {})`` while it loads the file."""
    module, _, name = module_and_name.rpartition(".")
    arguments = {
        "__class__": "tuple",
        "__module__": "builtins",
        "__loader__": "TupleNode",
        "content": [_json(code), _empty_dict()],
    }
    node = {"__class__": name, "__module__": module, "__loader__": loader}
    if loader == "LossNode":  # a ReduceNode: constructor(*args), then its (empty) state
        return {**node, "__reduce__": {"args": arguments}, "content": _empty_dict()}
    return {**node, "content": arguments}


def _forest_schema() -> tuple[dict, dict[str, bytes]]:
    """The schema and arrays of a real skops file of a small forest."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    forest = RandomForestClassifier(n_estimators=2, max_depth=2, random_state=0)
    data = skops_io.dumps(forest.fit(X, X[:, 0] > 0))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    return json.loads(files.pop("schema.json")), files


def payload_file(path: Path, marker: Path, how: str) -> Path:
    """A skops file that creates ``marker`` when loaded with the old, prefix-based trust.

    ``how``: ``alone`` (the file is the call), ``loss`` (the call as a loss object), or
    ``inside`` (a working forest with the call hidden in one of its attributes).
    """
    code = f"open({str(marker)!r}, 'w').close()"
    files: dict[str, bytes] = {}
    if how == "alone":
        schema = _call(RUNSTRING, "ConstructorFromReduceNode", code)
    elif how == "loss":
        schema = _call(RUNSTRING, "LossNode", code)
    else:
        schema, files = _forest_schema()
        call = _call(RUNSTRING, "ConstructorFromReduceNode", code)
        schema["content"]["content"]["_note"] = call
        # key_types pairs each key with the type it is rebuilt as; the new key is a str.
        key_types = schema["content"]["key_types"]["content"]
        key_types.append({"__class__": "str", "__module__": "builtins", "__loader__": "TypeNode"})
    schema.update(protocol=2, _skops_version="0.16.0")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("schema.json", json.dumps(schema))
        for name, data in files.items():
            archive.writestr(name, data)
    return path


HOW = ("alone", "loss", "inside")


@pytest.fixture(params=HOW)
def attack(request, tmp_path):
    """(skops file, spec using it, marker the file would create)."""
    marker = tmp_path / "MARKER"
    model = payload_file(tmp_path / "m.skops", marker, request.param)
    spec = tmp_path / "spec.ver"
    spec.write_text('model m = sklearn "m.skops"\nproperty p {\n    forall x: m(x) <= 2\n}\n')
    return model, spec, marker


def test_python_api_refuses_and_runs_nothing(attack):
    model, spec, marker = attack
    with pytest.raises(ModelError, match=f"{RUNSTRING}"):
        load_model(model)
    with pytest.raises(SpecError) as caught:
        load(spec)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "V401" and RUNSTRING in diagnostic.message
    assert not marker.exists()


@pytest.mark.parametrize("command", ["run", "check", "inspect"])
def test_command_line_refuses_and_runs_nothing(attack, command, capsys):
    model, spec, marker = attack
    target = model if command == "inspect" else spec
    assert main([command, str(target)]) == ExitCode.ERROR
    out = "".join(capsys.readouterr())  # `ver check` reports on stdout
    assert RUNSTRING in out and "internal error" not in out
    if command != "inspect":
        assert "error[V401]" in out
    assert not marker.exists()


def test_pytest_plugin_refuses_and_runs_nothing(attack, pytester):
    model, spec, marker = attack
    (pytester.path / "m.skops").write_bytes(model.read_bytes())
    (pytester.path / "test_trust.ver").write_text(spec.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*V401*"])
    assert not marker.exists()


def test_language_server_refuses_on_open_and_runs_nothing(tmp_path):
    pytest.importorskip("pygls", reason="the language server needs pygls (the lsp extra)")
    from editor.lsp_client import Client

    markers = {}
    client = Client(tmp_path)
    client.start(tmp_path.as_uri())
    try:
        for how in HOW:
            marker = markers[how] = tmp_path / f"MARKER_{how}"
            payload_file(tmp_path / f"{how}.skops", marker, how)
            path = tmp_path / f"{how}.ver"
            text = f'model m = sklearn "{how}.skops"\n'
            path.write_text(text)
            item = {"uri": path.as_uri(), "languageId": "ver", "version": 1, "text": text}
            client.notify("textDocument/didOpen", {"textDocument": item})
            (diagnostic,) = client.diagnostics(path.as_uri())["diagnostics"]
            assert diagnostic["code"] == "V401" and RUNSTRING in diagnostic["message"]
    finally:
        assert client.stop() == 0
    assert not any(m.exists() for m in markers.values())


def _estimators():
    """One fitted estimator of every kind and loss the importer reads (a few trees each)."""
    from sklearn import ensemble, tree

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    binary, three = X[:, 0] > 0, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    target, positive = X[:, 0] + X[:, 1], np.exp(X[:, 0])
    few = {"n_estimators": 2, "max_depth": 2, "random_state": 0}
    hist = {"max_iter": 2, "max_depth": 2, "random_state": 0}
    fitted = []
    for cls in (tree.DecisionTreeClassifier, tree.ExtraTreeClassifier):
        fitted += [cls(max_depth=2, random_state=0).fit(X, y) for y in (binary, three)]
    for cls in (tree.DecisionTreeRegressor, tree.ExtraTreeRegressor):
        fitted.append(cls(max_depth=2, random_state=0).fit(X, target))
    for cls in (ensemble.RandomForestClassifier, ensemble.ExtraTreesClassifier):
        fitted += [cls(**few).fit(X, y) for y in (binary, three)]
    # A random state given as an object is saved as one.
    state = np.random.RandomState(0)
    fitted.append(ensemble.RandomForestClassifier(n_estimators=2, random_state=state).fit(X, binary))
    # Labels and column names that are strings are saved as object arrays.
    names = np.array(["no", "yes"])[binary.astype(int)]
    fitted.append(ensemble.RandomForestClassifier(**few).fit(X, names))
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(X, columns=["a", "b", "c"])
    fitted.append(ensemble.HistGradientBoostingClassifier(**hist).fit(frame, names))
    for cls in (ensemble.RandomForestRegressor, ensemble.ExtraTreesRegressor):
        fitted.append(cls(**few).fit(X, target))
    for loss in ("log_loss", "exponential"):
        fitted.append(ensemble.GradientBoostingClassifier(loss=loss, **few).fit(X, binary))
    fitted.append(ensemble.GradientBoostingClassifier(**few).fit(X, three))
    fitted.append(ensemble.GradientBoostingClassifier(init="zero", **few).fit(X, binary))
    for loss in ("squared_error", "absolute_error", "huber", "quantile"):
        fitted.append(ensemble.GradientBoostingRegressor(loss=loss, **few).fit(X, target))
    fitted += [ensemble.HistGradientBoostingClassifier(**hist).fit(X, y) for y in (binary, three)]
    for loss in ("squared_error", "absolute_error", "gamma", "poisson", "quantile"):
        y = positive if loss in ("gamma", "poisson") else target
        quantile = {"quantile": 0.3} if loss == "quantile" else {}
        model = ensemble.HistGradientBoostingRegressor(loss=loss, **quantile, **hist)
        fitted.append(model.fit(X, y))
    return X, fitted


def test_every_kind_of_model_the_importer_reads_loads_from_skops(tmp_path):
    from veritas_dsl.model import Ensemble

    X, fitted = _estimators()
    for i, estimator in enumerate(fitted):
        path = tmp_path / f"m{i}.skops"
        skops_io.dump(estimator, path)
        loaded = load_model(path)
        direct = Ensemble.from_sklearn(estimator)
        assert loaded.n_trees == direct.n_trees, estimator
        np.testing.assert_array_equal(loaded.eval(X), direct.eval(X))


def test_an_allowed_type_in_another_role_is_refused(tmp_path):
    """An array type is trusted as an array, not as something to call with the file's data."""
    schema = _call("numpy.ndarray", "ConstructorFromReduceNode", "x")
    path = tmp_path / "m.skops"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("schema.json", json.dumps({**schema, "protocol": 2}))
    with pytest.raises(ModelError, match=r"numpy\.ndarray \(ConstructorFromReduceNode\)"):
        load_model(path)


def test_a_name_hidden_in_data_is_refused(tmp_path):
    """A random generator names its bit generator in plain data, which skops calls: skops' own
    audit sees it, and it is outside the table."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    X = np.random.default_rng(0).normal(size=(50, 2))
    data = skops_io.dumps(HistGradientBoostingRegressor(max_iter=2).fit(X, X[:, 0]))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    text = files["schema.json"].decode()
    assert text.count('\\"PCG64\\"') == 1
    files["schema.json"] = text.replace('\\"PCG64\\"', '\\"seed\\"').encode()
    path = tmp_path / "m.skops"
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    with pytest.raises(ModelError, match=r"numpy\.random\.seed"):
        load_model(path)


def _crafted_tree(tmp_path) -> Path:
    """A forest whose leaf has left child -5: we read it as a leaf, scikit-learn as a split."""
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.tree._tree import Tree

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    fitted = DecisionTreeClassifier(max_depth=1).fit(X, [0, 0, 1, 1])
    state = fitted.tree_.__getstate__()
    state["nodes"] = state["nodes"].copy()
    state["nodes"]["left_child"][2] = -5
    tree = Tree(*fitted.tree_.__reduce__()[1])
    tree.__setstate__(state)
    fitted.tree_ = tree
    skops_io.dump(fitted, tmp_path / "tree.skops")
    return tmp_path / "tree.skops"


def _crafted_predictor(tmp_path) -> Path:
    """Histogram boosting whose split points back at the root: a cycle."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    X = np.random.default_rng(0).normal(size=(80, 2))
    fitted = HistGradientBoostingRegressor(max_iter=1, max_depth=2, random_state=0)
    nodes = fitted.fit(X, X[:, 0])._predictors[0][0].nodes
    nodes["left"][np.nonzero(nodes["is_leaf"] == 0)[0][-1]] = 0
    skops_io.dump(fitted, tmp_path / "hist.skops")
    return tmp_path / "hist.skops"


@pytest.mark.parametrize(
    "craft, reason",
    [
        (_crafted_tree, "tree 0, node 2: its left child -5 is not a node"),
        (_crafted_predictor, "node 2: its child 0 is not a node of the tree, or is reached twice"),
    ],
)
def test_trees_are_checked_before_scikit_learn_follows_them(tmp_path, craft, reason):
    """skops leaves trees to the caller because scikit-learn's predictors follow their children
    unchecked; we trust them, so the importer checks them. These crashed `ver inspect` (a
    segmentation fault) and made it loop for ever. A child process, so that a crash fails the
    test rather than ending pytest."""
    path = craft(tmp_path)
    code = f"from veritas_dsl.cli import main; raise SystemExit(main(['inspect', {str(path)!r}]))"
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == ExitCode.ERROR, child
    assert reason in child.stderr and "internal error" not in child.stderr


def _saved(tmp_path, estimator) -> Path:
    path = tmp_path / "m.skops"
    skops_io.dump(estimator, path)
    return path


def test_feature_names_must_be_as_many_as_the_inputs(tmp_path):
    """An Ensemble counts features by name, scikit-learn by n_features_in_. A tree fitted on one
    input, given three names and a split on the third, passed our checks, and scikit-learn's
    predictor (which the parity check and witness checks call with one column) read X[i, 2]:
    out of bounds. Fewer names than inputs was an internal error."""
    from sklearn.tree import DecisionTreeRegressor

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    for names in (["a", "b", "c"], []):
        fitted = DecisionTreeRegressor(max_depth=1).fit(X, [0.0, 0.0, 1.0, 1.0])
        state = fitted.tree_.__getstate__()
        state["nodes"] = state["nodes"].copy()
        state["nodes"]["feature"][0] = len(names) - 1 if names else 0
        fitted.tree_.__setstate__(state)
        fitted.feature_names_in_ = np.array(names, dtype=object)
        with pytest.raises(ModelError, match="feature names for 1 input"):
            load_model(_saved(tmp_path, fitted))


def test_an_estimator_whose_parts_disagree_is_refused_when_loaded(tmp_path):
    """A forest whose member expects three inputs where the forest has two loaded, and the
    parity check then ended in an internal error: scikit-learn is run once as the file loads."""
    from sklearn.ensemble import RandomForestClassifier

    X = np.random.default_rng(0).normal(size=(60, 2))
    forest = RandomForestClassifier(n_estimators=2, max_depth=2, random_state=0)
    forest.fit(X, X[:, 0] > 0).estimators_[1].n_features_in_ = 3
    with pytest.raises(ModelError, match=r"broken.*3 features"):
        load_model(_saved(tmp_path, forest))


def _zeros(archive: zipfile.ZipFile, name: str, megabytes: int) -> None:
    with archive.open(name, "w") as member:
        for _ in range(megabytes):
            member.write(bytes(1 << 20))


def test_an_archive_that_inflates_far_beyond_its_size_is_refused(tmp_path):
    """skops reads a member once for each node that names it, before anything is checked: 700
    bytes of bzip2 named 64 times asked for 16 GB. 300 MB of zeros, deflated, is enough to show
    it: from some 300 kB, read 300 MB, and 600 MB if two nodes name it."""
    array = {"__class__": "ndarray", "__module__": "numpy", "__loader__": "NdArrayNode"}
    array |= {"type": "numpy", "file": "a.npy"}
    schema = {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode"}
    schema |= {"content": [array, array], "protocol": 2}
    path = tmp_path / "bomb.skops"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("schema.json", json.dumps(schema))
        _zeros(archive, "a.npy", 300)
    with pytest.raises(ModelError, match=r"inflate its [0-9,]+ bytes to 629,14"):
        load_model(path)
