"""SimHash combination: per-bit signed sum of feature weights.

This is the combination of seeds 000 and 001 (Charikar's SimHash as in Google's patent):
keep one tally per bit, starting at zero; for every feature, **add** its weight to tally
``i`` when bit ``i`` of the feature hash is 1 and **subtract** it when the bit is 0. The
fingerprint has bit ``i`` set when tally ``i`` is **> 0**; a tally of exactly 0 (a tie)
gives 0.

Bit order: bit ``i`` of a feature hash, ``(h >> i) & 1`` with the least significant bit
as bit 0, counts toward bit ``i`` of the fingerprint. The result is an unsigned Python int
in ``[0, 2**64)``; use :func:`simpg.bits.to_db` to store it in a PostgreSQL ``bigint``.

Weights are fixed point: each weight is rounded (half to even) to a multiple of
``1/65536`` and tallies are exact integers, so a fingerprint never depends on the order
of floating-point additions, the BLAS in use or the machine. Weights must be finite and
in ``[0, 2**40)``; weights below ``2**-17`` count as zero.

Example:
    >>> combine([(0b0011, 1.0), (0b0101, 1.0), (0b0110, 1.0)])
    7
    >>> combine([(0b01, 2.0), (0b10, 1.0)])
    1
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from simpg.bits import check
from simpg.fingerprint.errors import InvalidDocument, NoFeatures

__all__ = ["QUANTUM", "BitTally", "bit_counts", "combine", "quantize", "quantize_array"]

BITS: Final = 64
QUANTUM: Final = 1 << 16
_MAX_WEIGHT: Final = 1 << 40
# Most rows per int64 matrix product; fewer when weights are large, so sums stay < 2**62.
_BLOCK: Final = 1 << 16


def quantize(weight: float) -> int:
    """Return ``weight`` in fixed-point units of 1/65536 (round half to even)."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise InvalidDocument(f"expected a number as feature weight, got {weight!r}")
    w = float(weight)
    if not math.isfinite(w) or not 0.0 <= w < _MAX_WEIGHT:
        raise InvalidDocument(f"expected a finite feature weight in [0, 2**40), got {weight!r}")
    return round(w * QUANTUM)


# Bit j of every byte of a hash: eight byte-wide counters in one uint64.
_LOW_BITS: Final = np.uint64(0x0101010101010101)
_SHIFTS: Final = np.arange(8, dtype=np.uint64)[:, None]
# Hashes summed per byte-wide counter: 255 ones at most, so no counter carries into the next.
_COUNTER_BLOCK: Final = 255
# Hashes counted at a time: the (8, _PIECE) scratch stays at 2 MB for any document.
_PIECE: Final = 128 * _COUNTER_BLOCK


def bit_counts(hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """How many of ``hashes`` have bit i set, for i = 0..63 (LSB first).

    Counted eight bits at a time: ``(h >> j) & 0x0101010101010101`` keeps bit j of each
    byte, and summing blocks of 255 such values counts each byte's bit j in its own byte
    (at most 255, so no carry). The eight shifts are one numpy call over an (8, n) array:
    a few calls per document, about three times faster than one ``bincount`` per hash byte.
    """
    values = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
    counts = np.zeros((8, 8), dtype=np.int64)  # [j, byte k]: hashes with bit 8 * k + j set
    for lo in range(0, len(values), _PIECE):
        piece = values[lo : lo + _PIECE]
        n = len(piece)
        blocks = -(-n // _COUNTER_BLOCK)
        scratch = np.empty((8, blocks * _COUNTER_BLOCK), dtype=np.uint64)
        scratch[:, n:] = 0  # zeros past the end count nothing
        np.right_shift(piece[None, :], _SHIFTS, out=scratch[:, :n])
        scratch &= _LOW_BITS
        sums = np.add.reduce(scratch.reshape(8, blocks, _COUNTER_BLOCK), axis=2)
        # byte k of a sum is its counter k: its little-endian bytes, on any machine
        counts += sums.astype("<u8", copy=False).view(np.uint8).reshape(8, blocks, 8).sum(axis=1, dtype=np.int64)
    out: npt.NDArray[np.int64] = counts.T.reshape(64)
    return out


def quantize_array(weights: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Vectorised :func:`quantize` (same rounding: half to even) for valid float weights."""
    w = np.asarray(weights, dtype=np.float64)
    if w.size:
        lo, hi = float(w.min()), float(w.max())  # NaN propagates into both
        if not (lo >= 0 and hi < _MAX_WEIGHT):
            bad = next(x for x in w.tolist() if not (math.isfinite(x) and 0 <= x < _MAX_WEIGHT))
            raise InvalidDocument(f"expected a finite feature weight in [0, 2**40), got {bad!r}")
    return np.rint(w * QUANTUM).astype(np.int64)


def _bit_matrix(hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    # Little-endian bytes + little bit order: column i is bit i of the hash (LSB = 0).
    as_le = np.ascontiguousarray(hashes, dtype="<u8")
    return np.unpackbits(as_le.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")


class BitTally:
    """Exact per-bit tallies, fed in batches; :meth:`value` gives the fingerprint.

    Tallies are Python ints, so any number of features can be added (documents are
    streamed in chunks) without overflow.
    """

    __slots__ = ("features", "tallies", "total")

    def __init__(self) -> None:
        self.tallies = [0] * BITS
        self.total = 0
        self.features = 0

    def add_uniform(self, hashes: npt.NDArray[np.uint64], weight_q: int) -> None:
        """Add every hash with the same fixed-point weight ``weight_q``."""
        n = len(hashes)
        if n == 0 or weight_q == 0:
            return
        ones = bit_counts(hashes).tolist()
        tallies = self.tallies
        for i in range(BITS):
            tallies[i] += weight_q * (2 * int(ones[i]) - n)
        self.total += weight_q * n
        self.features += n

    def add_weighted(self, hashes: npt.NDArray[np.uint64], weights_q: npt.NDArray[np.int64]) -> None:
        """Add hashes with per-feature fixed-point weights (same length as ``hashes``)."""
        n = len(hashes)
        if n == 0:
            return
        tallies = self.tallies
        weights_q = np.asarray(weights_q, dtype=np.int64)
        block = max(1, min(_BLOCK, (1 << 62) // max(1, int(weights_q.max()))))
        for lo in range(0, n, block):
            w = weights_q[lo : lo + block]
            # Weight of the features with bit i set; the tally is that minus the rest.
            ones = (w @ _bit_matrix(hashes[lo : lo + block])).tolist()
            total = int(w.sum())
            for i in range(BITS):
                tallies[i] += 2 * int(ones[i]) - total
            self.total += total
        self.features += n

    def value(self) -> int:
        """The fingerprint: bit ``i`` set when tally ``i`` is > 0."""
        if self.total == 0:
            raise NoFeatures(
                "document has no usable features"
                if self.features == 0
                else "document has no usable features (all feature weights are 0)"
            )
        fp = 0
        for i, tally in enumerate(self.tallies):
            if tally > 0:
                fp |= 1 << i
        return fp


def combine(pairs: Iterable[tuple[int, float]]) -> int:
    """Fingerprint of ``(feature hash, weight)`` pairs (hashes unsigned 64-bit ints).

    Raises:
        NoFeatures: when ``pairs`` is empty or every weight is zero.
        InvalidDocument: for a hash outside ``[0, 2**64)`` or a bad weight.
    """
    hashes: list[int] = []
    weights: list[int] = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidDocument(f"expected (feature hash, weight) pair, got {pair!r}")
        h, w = pair
        try:
            hashes.append(check(h))
        except ValueError:
            raise InvalidDocument(f"expected 64-bit feature hash, got {h!r}") from None
        weights.append(quantize(w))
    tally = BitTally()
    tally.add_weighted(np.array(hashes, dtype=np.uint64), np.array(weights, dtype=np.int64))
    return tally.value()
