"""64-bit feature hashes: FNV-1a (the default), FNV-1 and MurmurHash3.

Every feature (a word shingle, a Chinese term, a caller's own feature) is hashed to an
unsigned 64-bit integer before the SimHash combination. Three hashes can be selected by
name in :class:`~simpg.fingerprint.FingerprintConfig` (``hash=``):

``"fnv1a"``
    FNV-1a, 64 bit, over the UTF-8 bytes (the default; seed 001 recommends it).
``"fnv1"``
    FNV-1, 64 bit, over the UTF-8 bytes. For ASCII features this is exactly the Java
    ``fnv1_64_hash`` of seed 002; that code XORs UTF-16 code units (``charAt``) rather
    than bytes, so for non-ASCII features it differs from it (and from the FNV reference).
``"murmur3"``
    MurmurHash3 x64 128-bit with seed 0, via the ``mmh3`` package, keeping the **first
    (low) 64-bit half** ``h1``: ``mmh3.hash64(data, signed=False)[0]``, which equals
    ``mmh3.hash128(data) & (2**64 - 1)``.

Strings are always hashed as UTF-8, so results never depend on Python's salted ``hash()``.

Example:
    >>> hex(fnv1a64("a"))
    '0xaf63dc4c8601ec8c'
    >>> hex(fnv1_64("a"))
    '0xaf63bd4c8601b7be'
    >>> hash_function("fnv1a")(b"foobar") == 0x85944171F73967E8
    True

The ``hash_spans`` function hashes many byte ranges of one buffer at once (all shingles of a
document), vectorised with numpy ``uint64`` arithmetic for the FNV variants;
``hash_windows`` the same for every window of ``n`` bytes (ASCII character n-grams).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from simpg.fingerprint.errors import InvalidConfig

__all__ = [
    "FNV64_OFFSET",
    "FNV64_PRIME",
    "HASH_NAMES",
    "fnv1_64",
    "fnv1a64",
    "hash_function",
    "hash_spans",
    "hash_windows",
    "murmur3_64",
]

FNV64_OFFSET: Final = 0xCBF29CE484222325
FNV64_PRIME: Final = 0x100000001B3
_MASK: Final = (1 << 64) - 1

HASH_NAMES: Final = ("fnv1a", "fnv1", "murmur3")

U64Array = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.intp]


def _as_bytes(data: str | bytes | bytearray | memoryview) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected str or bytes, got {data!r}")


def _fnv1a_from(state: int, data: bytes) -> int:
    for byte in data:
        state = ((state ^ byte) * FNV64_PRIME) & _MASK
    return state


def _fnv1_from(state: int, data: bytes) -> int:
    for byte in data:
        state = ((state * FNV64_PRIME) & _MASK) ^ byte
    return state


def fnv1a64(data: str | bytes) -> int:
    """FNV-1a 64-bit hash of ``data`` (``str`` is hashed as UTF-8)."""
    return _fnv1a_from(FNV64_OFFSET, _as_bytes(data))


def fnv1_64(data: str | bytes) -> int:
    """FNV-1 64-bit hash of ``data`` (``str`` is hashed as UTF-8)."""
    return _fnv1_from(FNV64_OFFSET, _as_bytes(data))


def murmur3_64(data: str | bytes) -> int:
    """Low 64 bits (``h1``) of MurmurHash3 x64 128-bit, seed 0 (``str`` hashed as UTF-8)."""
    import mmh3

    return int(mmh3.hash64(_as_bytes(data), seed=0, x64arch=True, signed=False)[0])


_FUNCTIONS: Final[dict[str, Callable[[str | bytes], int]]] = {
    "fnv1a": fnv1a64,
    "fnv1": fnv1_64,
    "murmur3": murmur3_64,
}


def hash_function(name: str) -> Callable[[str | bytes], int]:
    """Return the scalar hash function called ``name`` (one of :data:`HASH_NAMES`)."""
    try:
        return _FUNCTIONS[name]
    except (KeyError, TypeError):
        raise InvalidConfig(f"unknown hash {name!r}; expected one of {', '.join(HASH_NAMES)}") from None


# Below this many still-active spans, long tails are finished in plain Python: a handful of
# very long tokens (base64 blobs, URLs) would otherwise cost one numpy call per byte.
_TAIL_SPANS: Final = 8
_TAIL_STEPS: Final = 256


def hash_spans(
    name: str,
    buf: bytes,
    starts: IntArray,
    ends: IntArray,
    prefix: bytes = b"",
) -> U64Array:
    """Hash ``prefix + buf[starts[i]:ends[i]]`` for every i, returning a ``uint64`` array.

    For FNV the spans are hashed in lockstep: spans are sorted by length and byte ``j`` of
    every span still longer than ``j`` is folded in with one numpy operation, so the work is
    the total span length with about ``max(len)`` numpy calls per document.

    Args:
        name: hash name, one of :data:`HASH_NAMES`.
        buf: the UTF-8 bytes the spans index into.
        starts: span start offsets (inclusive).
        ends: span end offsets (exclusive), same length as ``starts``.
        prefix: bytes hashed before every span (used for field names such as ``b"title:"``).

    Returns:
        The hashes, in the order of ``starts``.
    """
    count = len(starts)
    if name == "murmur3":
        import mmh3

        hash64 = mmh3.hash64
        values = [
            hash64(prefix + buf[s:e], seed=0, x64arch=True, signed=False)[0]
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        return np.array(values, dtype=np.uint64).reshape(count)
    if name == "fnv1a":
        init, xor_first = _fnv1a_from(FNV64_OFFSET, prefix), True
    elif name == "fnv1":
        init, xor_first = _fnv1_from(FNV64_OFFSET, prefix), False
    else:
        hash_function(name)  # raises InvalidConfig naming the value
        raise AssertionError("unreachable")
    return _fnv_spans(buf, starts, ends, init, xor_first)


def hash_windows(name: str, buf: bytes, n: int, prefix: bytes = b"") -> U64Array:
    """:func:`hash_spans` of every ``n``-byte window of ``buf``, in order: ``prefix + buf[i:i + n]``.

    For FNV, byte ``j`` of every window is the slice ``buf[j:j + count]``: no index arrays
    and no sorting, about twice as fast as the same spans through :func:`hash_spans`.
    """
    count = len(buf) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    if name not in ("fnv1a", "fnv1"):
        starts = np.arange(count, dtype=np.intp)
        return hash_spans(name, buf, starts, starts + n, prefix)
    xor_first = name == "fnv1a"
    init = (_fnv1a_from if xor_first else _fnv1_from)(FNV64_OFFSET, prefix)
    h = np.full(count, init, dtype=np.uint64)
    data = np.frombuffer(buf, dtype=np.uint8).astype(np.uint64)
    prime = np.uint64(FNV64_PRIME)
    for j in range(n):
        if xor_first:
            h ^= data[j:j + count]
            h *= prime
        else:
            h *= prime
            h ^= data[j:j + count]
    return h


def _fnv_spans(buf: bytes, starts: IntArray, ends: IntArray, init: int, xor_first: bool) -> U64Array:
    count = len(starts)
    out = np.empty(count, dtype=np.uint64)
    if count == 0:
        return out
    lengths = (ends - starts).astype(np.intp)
    if lengths.min() == lengths.max():
        # All spans the same length (ASCII character n-grams): no sorting needed.
        order = np.arange(count, dtype=np.intp)
    else:
        order = np.argsort(-lengths, kind="stable")
    pos = starts[order].astype(np.intp)
    sorted_len = lengths[order]
    max_len = int(sorted_len[0])
    h = np.full(count, init, dtype=np.uint64)
    if max_len:
        data = np.frombuffer(buf, dtype=np.uint8).astype(np.uint64)
        # active[j]: how many spans are longer than j (spans are sorted longest first).
        ascending = sorted_len[::-1]
        active = count - np.searchsorted(ascending, np.arange(max_len), side="right")
        prime = np.uint64(FNV64_PRIME)
        step = 0
        while step < max_len:
            m = int(active[step])
            if m <= _TAIL_SPANS and max_len - step > _TAIL_STEPS:
                break
            hm = h[:m]
            if xor_first:
                hm ^= data[pos[:m]]
                hm *= prime
            else:
                hm *= prime
                hm ^= data[pos[:m]]
            pos[:m] += 1
            step += 1
        if step < max_len:
            fold = _fnv1a_from if xor_first else _fnv1_from
            end_sorted = starts[order] + sorted_len
            for i in range(int(active[step])):
                p, e = int(pos[i]), int(end_sorted[i])
                h[i] = fold(int(h[i]), buf[p:e])
    out[order] = h
    return out
