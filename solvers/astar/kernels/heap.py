"""The heap of open states: a binary max-heap on ``(key, tie)`` over three parallel arrays."""

from __future__ import annotations

from veritas_dsl.jit import inlined, internal


@inlined
def better(k1, t1, k2, t2):
    """Whether ``(k1, t1)`` comes before ``(k2, t2)``."""
    return k1 > k2 or (k1 == k2 and t1 > t2)


@internal
def heap_push(hp_key, hp_tie, hp_state, size, key, tie, state):
    """Insert ``state``; return the new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if not better(key, tie, hp_key[p], hp_tie[p]):
            break
        hp_key[i] = hp_key[p]
        hp_tie[i] = hp_tie[p]
        hp_state[i] = hp_state[p]
        i = p
    hp_key[i] = key
    hp_tie[i] = tie
    hp_state[i] = state
    return size + 1


@internal
def heap_pop(hp_key, hp_tie, hp_state, size):
    """Remove the best entry; return ``(state, new size)``."""
    top = hp_state[0]
    size -= 1
    if size > 0:
        key = hp_key[size]
        tie = hp_tie[size]
        state = hp_state[size]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and better(hp_key[c + 1], hp_tie[c + 1], hp_key[c], hp_tie[c]):
                c += 1
            if not better(hp_key[c], hp_tie[c], key, tie):
                break
            hp_key[i] = hp_key[c]
            hp_tie[i] = hp_tie[c]
            hp_state[i] = hp_state[c]
            i = c
        hp_key[i] = key
        hp_tie[i] = tie
        hp_state[i] = state
    return top, size
