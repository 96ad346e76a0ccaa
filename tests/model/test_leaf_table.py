"""A model's leaf table (nodes x outputs) is sized by counts a file declares: a few kilobytes can
declare 100,000 classes. Such a table is refused before it is allocated (found by an outside
review: a 1.4 MB LightGBM text with num_class=10000 peaked at 1.76 GB)."""

from __future__ import annotations

import json

import pytest

from veritas_dsl.model import Ensemble, ModelError, library


def lightgbm_text(n_classes: int) -> str:
    head = (
        f"tree\nversion=v4\nnum_class={n_classes}\nnum_tree_per_iteration={n_classes}\n"
        "label_index=0\nmax_feature_idx=0\nobjective=multiclass\nfeature_names=a\n"
        "feature_infos=none\n\n"
    )
    tree = (
        "Tree={t}\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n"
        "left_child=\nright_child=\nleaf_value=0.5\nis_linear=0\nshrinkage=1\n\n\n"
    )
    return head + "".join(tree.format(t=t) for t in range(n_classes)) + "end of trees\n"


def test_a_declared_class_count_cannot_size_the_leaf_table_beyond_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "many.txt"
    path.write_text(lightgbm_text(40))  # 40 single-leaf trees of 40 outputs: 1,600 values
    assert Ensemble.from_lightgbm(path).n_trees == 40
    monkeypatch.setattr(library, "MAX_LEAF_VALUES", 1_599)
    with pytest.raises(ModelError, match="40 nodes with 40 outputs each would need 1,600 leaf"):
        Ensemble.from_lightgbm(path)


def test_a_tree_dump_with_many_classes_too(tmp_path, monkeypatch):
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([{"nodeid": 0, "leaf": 0.5}] * 30))
    monkeypatch.setattr(library, "MAX_LEAF_VALUES", 100)
    with pytest.raises(ModelError, match="would need 900 leaf values"):
        Ensemble.from_xgboost_dump(path, n_classes=30, n_features=1)
