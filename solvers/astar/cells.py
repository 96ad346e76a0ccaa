"""Cells and ranks (step 4 of :mod:`~veritas_dsl.solvers.astar.problem`): a variable's thresholds
(rounded up to integers for int and bool variables, where ``x < t`` means ``x < ceil(t)``) and its
static bounds cut its line into cells; splits become integer ranks, and the static box a root box
of cells.
"""

from __future__ import annotations

import math

import numpy as np

from veritas_dsl.float32 import next_up


def cells(split_var, split_value, lo, hi, integral, n_vars: int):
    """The cells of every variable, cut by the splits' thresholds and the static box ``[lo, hi]``:
    ``(cell_ptr, cell_lo, cell_hi, root, split_rank)``, ``root`` the static box as cell ranks
    (lows, then highs) and ``split_rank`` the rank of each split's threshold."""
    bound_var, bound_value = _bound_thresholds(lo, hi, integral)
    all_var = np.concatenate([split_var, bound_var])
    all_value = np.concatenate([split_value, bound_value])
    values, value_id = np.unique(all_value, return_inverse=True)
    keys = all_var.astype(np.int64) * len(values) + value_id
    unique_keys, key_id = np.unique(keys, return_inverse=True)
    key_var = (unique_keys // max(len(values), 1)).astype(np.int64)
    key_value = values[unique_keys % max(len(values), 1)] if len(values) else values
    var_start = np.searchsorted(key_var, np.arange(n_vars + 1))
    rank = key_id - var_start[all_var]
    n_splits = len(split_var)
    split_rank = rank[:n_splits].astype(np.int32)
    bound_rank = rank[n_splits:]

    cell_ptr = (var_start[:-1] + np.arange(n_vars)).astype(np.int32)
    cell_ptr = np.append(cell_ptr, var_start[-1] + n_vars).astype(np.int32)
    with np.errstate(over="ignore"):  # below the lowest float32 (a bound there): -inf, no input
        below = np.where(
            integral[key_var], key_value - 1.0, np.nextafter(key_value.astype(np.float32), -np.inf)
        )
    n_cells = int(cell_ptr[-1])
    cell_lo = np.empty(n_cells)
    cell_hi = np.empty(n_cells)
    first = cell_ptr[:-1]
    last = cell_ptr[1:] - 1
    cell_lo[first] = -math.inf
    cell_hi[last] = math.inf
    # the threshold j of variable v starts cell j + 1 and ends cell j
    thr_cell = np.arange(len(key_var)) + key_var
    cell_lo[thr_cell + 1] = key_value
    cell_hi[thr_cell] = below

    root = np.empty(2 * n_vars, dtype=np.int32)
    root[:n_vars] = 0
    root[n_vars:] = np.diff(var_start)  # the last cell of each variable
    lo_finite = np.isfinite(lo)
    hi_finite = np.isfinite(hi)
    n_lo = int(lo_finite.sum())
    root[np.nonzero(lo_finite)[0]] = bound_rank[:n_lo] + 1
    root[n_vars + np.nonzero(hi_finite)[0]] = bound_rank[n_lo:]
    return cell_ptr, cell_lo, cell_hi, root, split_rank


def _bound_thresholds(lo, hi, integral):
    """Thresholds that make the static bounds cell boundaries: ``lo`` starts a cell, and the
    value right after ``hi`` starts the next one. Lows come first, then highs."""
    low_vars = np.nonzero(np.isfinite(lo))[0]
    high_vars = np.nonzero(np.isfinite(hi))[0]
    after = np.array([hi[v] + 1.0 if integral[v] else next_up(hi[v]) for v in high_vars])
    values = np.concatenate([lo[low_vars], after]) if len(after) else lo[low_vars]
    return np.concatenate([low_vars, high_vars]).astype(np.int64), values.astype(np.float64)
