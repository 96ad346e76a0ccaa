"""Compiled kernels of the A* engine: plain functions over contiguous arrays, nothing else.

Vocabulary shared by every kernel (the Python side in ``problem.py`` builds these arrays):

* A **variable** is one (instance, feature) pair, or several tied by ``x1.f == x2.f``; there are
  ``n_vars``. Each variable's float32 line is cut by the thresholds that matter into **cells**:
  variable ``v`` owns cells ``cell_ptr[v] .. cell_ptr[v + 1] - 1``; cell ``c`` is the closed float32
  interval ``[cell_lo[c], cell_hi[c]]`` (integral for int and bool variables).
* A **box** is one row of ``2 * n_vars`` integers: ``row[v]`` and ``row[n_vars + v]`` are the first
  and last cell (ranks, relative to ``cell_ptr[v]``) that variable ``v`` may take. The search's
  arena holds them as uint8 when every variable has at most 256 cells, else int32 (a state's
  bytes are mostly its box); other boxes are int32. Kernels read box entries into int64 before
  any arithmetic (uint8 minus uint8 would wrap) and store only ranks of the variable's cells.
* A **search tree** is a compacted tree over variables: node ``n`` is a split when
  ``nd_var[n] >= 0`` and sends cells ``<= nd_rank[n]`` left (``x < threshold`` goes left). Every
  root-to-leaf path is feasible on its own, so a leaf is reachable in a box exactly when every
  split on its path lets the box through. A tree's **columns** are its distinct vectors of
  leaf contributions to one term (terms it gives nothing are none): tree ``t``'s columns are
  ``tr_col[t]:tr_col[t + 1]``, column ``c`` adding to the terms
  ``col_term[col_ptr[c]:col_ptr[c + 1]]``. Node ``n`` holds one value per column of its tree at
  ``nd_max[tr_val[t] + (n - tr_root[t]) * n_cols + j]`` (a tree's nodes are consecutive; ``n_cols``
  its number of columns): at a leaf its contribution in integer units (the term scaled by
  ``2**q``, so that sums are exact), at a split the best of its subtree. A family's variants
  read their own trees and share unchanged ones, so a tree's work follows its distinct columns,
  not every term of the query.
* A **state** is a box plus ``st_u[s, k]``, the exact upper bound of term ``k`` over the box (the
  sum over trees of the best reachable leaf), and ``st_ptr[s]``, the first tree in search order
  that may still have more than one reachable leaf. A state whose trees all have one reachable leaf
  is complete: its bounds are its values.

Why integers: leaf values scaled to int64 add exactly, so bounds are the same whatever the order
they were updated in, and a tie between the best solution and the best open state is a tie.
Why no fastmath: thresholds compare exactly and bounds use infinities. Distances and linear
constraints are decided exactly with error-free float transformations (``two_sum``,
``two_prod``) and Shewchuk / CPython ``fsum`` partials, so no state is kept or cut on a rounding.

Modules, from the bottom up: ``layout`` (modes, statuses, slots), ``arrays``, ``exact``
(arithmetic), ``heap``, ``keys`` (a state's priority), ``trees`` (trees in a box), ``feasibility``
(input constraints lifted to boxes), ``search`` (the search loop, the one entry Python calls while
searching), ``repair`` (hill climbing from a new best point) and ``compaction`` (preparing the trees
of a query). Python calls only the kernels re-exported here; the others are compiled without the
wrappers that would let it, which would cost compile time (``tests/solvers/test_astar_kernels.py``
compiles its own).
"""

from veritas_dsl.solvers.astar.kernels.compaction import (
    compact_trees,
    leaf_boxes,
    node_depth,
    pair_gains,
    subtree_max,
)
from veritas_dsl.solvers.astar.kernels.exact import decode_distance, encode_distance
from veritas_dsl.solvers.astar.kernels.layout import *  # noqa: F403 (the shared numbers)
from veritas_dsl.solvers.astar.kernels.repair import repair
from veritas_dsl.solvers.astar.kernels.search import search
from veritas_dsl.solvers.astar.kernels.trees import eval_margins

__all__ = [
    "compact_trees",
    "decode_distance",
    "encode_distance",
    "eval_margins",
    "leaf_boxes",
    "node_depth",
    "pair_gains",
    "repair",
    "search",
    "subtree_max",
]
