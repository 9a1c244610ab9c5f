"""Binary min-heaps on flat arrays for the jitted simulator: ``keys`` ordered, ``a`` and ``b`` carried along. A
heap lives in ``[base, base + size)`` of its arrays, so many small heaps (one per server) share one allocation."""

from __future__ import annotations

from solvers.jit import njit


@njit
def heap_push(keys, a, b, base, size, key, va, vb):
    """Insert; returns the new size."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if keys[base + parent] <= key:
            break
        keys[base + i] = keys[base + parent]
        a[base + i] = a[base + parent]
        b[base + i] = b[base + parent]
        i = parent
    keys[base + i] = key
    a[base + i] = va
    b[base + i] = vb
    return size + 1


@njit
def heap_sift_down(keys, a, b, base, size, i):
    """Restore the heap below ``i`` after its key grew."""
    key, va, vb = keys[base + i], a[base + i], b[base + i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and keys[base + child + 1] < keys[base + child]:
            child += 1
        if keys[base + child] >= key:
            break
        keys[base + i] = keys[base + child]
        a[base + i] = a[base + child]
        b[base + i] = b[base + child]
        i = child
    keys[base + i] = key
    a[base + i] = va
    b[base + i] = vb


@njit
def heap_pop(keys, a, b, base, size):
    """Remove the top; returns the new size (the top's fields must be read before)."""
    size -= 1
    if size > 0:
        keys[base] = keys[base + size]
        a[base] = a[base + size]
        b[base] = b[base + size]
        heap_sift_down(keys, a, b, base, size, 0)
    return size
