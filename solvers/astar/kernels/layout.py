"""The numbers Python and the kernels share: search modes, statuses, and the slots of the
``ctx`` and ``params`` arrays."""

from __future__ import annotations

import numpy as np

MODE_MAXIMIZE = 0
"""Maximise term 0, or the least of terms 0..n-1 (a min); the other terms are output
constraints."""
MODE_FIND = 1
"""Find any complete state meeting every term's threshold (all terms are constraints)."""
MODE_DISTANCE = 2
"""Minimise the goal resource (a distance); all terms are constraints."""

STATUS_BUDGET = 0
"""The step budget of this call is spent; call again."""
STATUS_EXHAUSTED = 1
"""No open state is left: the incumbent (if any) is optimal, otherwise nothing is feasible."""
STATUS_OPTIMAL = 2
"""No open state can beat the incumbent."""
STATUS_MEMORY = 3
"""The state arena is nearly full; grow it (or stop) and call again."""
STATUS_SOLUTIONS = 4
"""The solution buffer is full or holds a solution to verify; drain it and call again."""
STATUS_FOUND = 5
"""Find mode: a verified solution was recorded."""

# ctx slots (int64)
C_HEAP = 0  # heap size
C_FREE = 1  # number of free rows on the free stack
C_NSOL = 2  # solutions recorded in the buffer
C_HAVE_INC = 3  # 1 once an incumbent exists
C_INC = 4  # incumbent key (states with key <= C_INC - margin cannot improve)
C_EXPANDED = 5  # states expanded so far
C_DIVE = 6  # the state being dived into, or -1
C_DIVE_STEPS = 7
C_BF_STEPS = 8
C_STAMP = 9  # stamp counter for scratch marks
C_PUSHED = 10  # states created so far
C_LIVE_PEAK = 11  # most live states at once
C_PRUNED = 12  # children cut by a bound or a constraint
C_DIVE_KEY = 13  # key of the state being dived into
C_STARTED = 14  # 1 once the root state was pushed (or found dead)
C_EPOCH = 15  # output constraints switched on so far: a state of an older epoch is stale
C_OFF = 16  # output constraints still off (complete states are then checked by the caller)
N_CTX = 18

# params slots (int64)
P_MODE = 0
P_GOAL = 1  # index of the goal resource (distance mode), else -1
P_MARGIN = 2  # prune when key <= incumbent - margin (0 when units are exact)
P_DIVE_NUM = 3  # dive while dive_steps * den <= bf_steps * num
P_DIVE_DEN = 4
P_MAX_LEAVES = 5
P_MAX_DEPTH = 6
P_SOLUTIONS = 7  # the N best solutions are asked: the caller raises the incumbent (to the Nth)
N_PARAMS = 8

NO_INCUMBENT = np.int64(-(2**62))
DEAD = -1
"""``st_ep`` of a state the caller dropped (epochs count from 0)."""

# what a term is (``term_cons``)
TERM_OBJECTIVE = 0
TERM_CONSTRAINT = 1
TERM_OFF = 2
"""An output constraint the search does not bound yet (see ``search.search``)."""
FLT_MAX = 3.4028234663852886e38
N_PARTIALS = 128
"""Slots of an exact sum's partials (``exact.msum_add``)."""

# resource kinds
KIND_CHANGED = 0
KIND_LINF = 1
KIND_L1 = 2
KIND_L2 = 3
"""The squared L2 distance: its cost is the exact sum of squared weighted gaps."""
