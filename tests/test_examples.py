"""Every shipped example and every example of the language reference runs, and its checks hold."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from lang.specs import DOCS, doc_examples, example_files

from veritas_dsl import parse


def run_spec(text: str, path: str):
    runs = parse(text, path).run(jobs=1)
    assert runs, "the spec runs no query"
    failed = [
        f"{r.name}: {c.text} ({c.detail})" for r in runs for c in r.checks if c.holds is not True
    ]
    assert not failed, failed
    for run in runs:
        assert run.result.termination.value != "error", (run.name, run.result.message)
    return runs


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_runs(path):
    run_spec(path.read_text(), str(path))


@pytest.mark.parametrize("name, text", doc_examples(), ids=[name for name, _ in doc_examples()])
def test_language_reference_example_runs(name, text):
    run_spec(text, str(DOCS))


def test_there_are_enough_examples():
    assert len(example_files()) >= 6
    assert len(doc_examples()) >= 6


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_lowered_queries_pickle_without_library_models(path):
    # What --jobs workers and Dask tasks receive: plain data, equal once unpickled, holding the
    # models' arrays but none of the library models (those stay where the spec was loaded).
    lowered = list(parse(path.read_text(), str(path)).lowered())
    copies = pickle.loads(pickle.dumps(lowered))
    assert [c.origin for c in copies] == [item.origin for item in lowered]
    assert [c.expectations for c in copies] == [item.expectations for item in lowered]
    assert [c.query.constraints for c in copies] == [item.query.constraints for item in lowered]
    for copy, item in zip(copies, lowered, strict=True):
        for name, model in copy.query.models.items():
            assert model.library is None
            assert np.array_equal(model.threshold, item.query.models[name].threshold)
            assert np.array_equal(model.value, item.query.models[name].value)
