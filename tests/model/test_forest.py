"""The vectorised forest checks against a plain walk of the trees, on random child arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import check_forest, parent_first_order, reorder


@st.composite
def child_arrays(draw):
    """Random ``left``/``right``/``offsets``: often a forest, often slightly broken."""
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    left, right = np.full(n, -1), np.full(n, -1)
    for t, size in enumerate(sizes):
        start = int(offsets[t])
        # Grow a tree: split a random leaf into the next two free nodes, in a random order.
        leaves, free = [start], list(range(start + 1, start + size))
        if draw(st.booleans()):
            free = draw(st.permutations(free))
        while len(free) >= 2 and draw(st.booleans()):
            leaf = leaves.pop(draw(st.integers(0, len(leaves) - 1)))
            left[leaf], right[leaf] = free.pop(0), free.pop(0)
            leaves += [left[leaf], right[leaf]]
    for _ in range(draw(st.integers(0, 2))):  # corruptions
        target = draw(st.sampled_from([left, right]))
        target[draw(st.integers(0, n - 1))] = draw(st.integers(-2, n + 1))
    return left, right, offsets


def reference_is_ordered_forest(left, right, offsets) -> bool:
    """Walk each tree from its root: every node reached once, each child after its parent."""
    leaf = left < 0
    seen = np.zeros(len(left), dtype=int)
    for t in range(len(offsets) - 1):
        start, end = int(offsets[t]), int(offsets[t + 1])
        stack = [start]
        while stack:
            node = stack.pop()
            seen[node] += 1
            if seen[node] > 1:
                return False
            if leaf[node]:
                if left[node] != -1 or right[node] != -1:
                    return False
                continue
            for child in (left[node], right[node]):
                if not node < child < end:
                    return False
                stack.append(child)
    return bool(np.all(seen == 1))


@given(child_arrays())
def test_check_forest_agrees_with_a_walk(arrays):
    left, right, offsets = arrays
    try:
        check_forest(left < 0, left, right, offsets)
        accepted = True
    except ModelError:
        accepted = False
    assert accepted == reference_is_ordered_forest(left, right, offsets)


@given(child_arrays())
@example(arrays=(np.array([-1]), np.array([1]), np.array([0, 1])))  # a leaf with a right child
def test_parent_first_order_keeps_exactly_the_reachable_nodes(arrays):
    left, right, offsets = arrays
    try:
        order = parent_first_order(left, right, offsets)
    except ModelError:
        return  # refused: a child outside its tree, or a node with two parents
    new_left, new_right, new_offsets = reorder(order, left, right, offsets)
    check_forest(new_left < 0, new_left, new_right, new_offsets)
    # The same trees: following children from each root visits the kept nodes in both.
    for t in range(len(offsets) - 1):
        old_nodes, new_nodes = [int(offsets[t])], [int(new_offsets[t])]
        while old_nodes:
            old, new = old_nodes.pop(), new_nodes.pop()
            assert order[new] == old
            if left[old] >= 0:
                old_nodes += [left[old], right[old]]
                new_nodes += [new_left[new], new_right[new]]
