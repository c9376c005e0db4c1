"""Near-duplicate detectors under evaluation, behind one small interface.

A detector gets the documents of one part of one language and returns one or more
:class:`Call` objects: the pairs of documents it calls near duplicates (indices into the list it
was given, ``i < j``), optionally its own clusters, and how many documents it could not index.
One run may return several calls, e.g. simpg at several radii from one fingerprinting.

Adding a detector is writing one class (or function returning one) and registering it::

    from bench.quality.detectors import Call, register

    @register("two-stage")
    class TwoStage:
        name = "two-stage"

        def __init__(self, radius: int = 8, **options):
            self.radius = radius

        def run(self, docs, lang):
            ...
            return [Call(label=f"two-stage r={self.radius}", detector=self.name, pairs=pairs)]

and then ``python3 -m bench.quality.evaluate --plugin my_module --detectors simpg,two-stage``.
Helpers for SimHash-like detectors: :func:`pairs_within` (all pairs within k bits, exact).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bench.quality import truth as truth_mod
from bench.quality.sources import DATA

FP_CACHE = DATA / "fpcache"


@dataclass
class Call:
    """What one detector setting decided on one part."""

    label: str  # row name in the report, e.g. "simpg k=4"
    detector: str
    pairs: np.ndarray  # (m, 2) int64, i < j, unique
    params: dict[str, Any] = field(default_factory=dict)
    clusters: list[list[int]] | None = None  # the detector's own clusters; None: from its pairs
    not_indexed: int = 0  # documents the detector refused (no fingerprint)
    seconds: float = 0.0  # time to sketch / fingerprint and find the pairs


class Detector(Protocol):
    """Anything with a ``name`` and ``run(docs, lang) -> list[Call]``."""

    name: str

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]: ...


DETECTORS: dict[str, Callable[..., Detector]] = {}


def register(name: str) -> Callable:
    """Class decorator (or function decorator for a factory) adding a detector by name."""

    def deco(factory: Callable[..., Detector]) -> Callable[..., Detector]:
        DETECTORS[name] = factory
        return factory

    return deco


def make(name: str, **options: Any) -> Detector:
    if name not in DETECTORS:
        raise SystemExit(f"unknown detector {name!r}; known: {', '.join(sorted(DETECTORS))}")
    return DETECTORS[name](**options)


# -- helpers ------------------------------------------------------------------------------


def popcount64(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
    return table[x.view(np.uint8).reshape(*x.shape, 8)].sum(axis=-1, dtype=np.uint8)


def pairs_within(fps: np.ndarray, valid: np.ndarray, kmax: int, chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i < j) of valid fingerprints within ``kmax`` bits, exactly, and its distance.

    Returns ``pairs`` (m, 2) int64 and ``dist`` (m,) uint8. Chunked XOR + popcount over all pairs.
    """
    idx = np.flatnonzero(valid)
    f = fps[idx].astype(np.uint64)
    out_p, out_d = [], []
    for s in range(0, len(f), chunk):
        d = popcount64(f[s : s + chunk, None] ^ f[None, s:])
        r, c = np.nonzero(d <= kmax)
        keep = c > r  # block row r is document s + r, block column c is document s + c
        r, c = r[keep], c[keep]
        out_p.append(np.stack([idx[r + s], idx[c + s]], axis=1))
        out_d.append(d[r, c])
    if not out_p:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.uint8)
    return np.concatenate(out_p).astype(np.int64), np.concatenate(out_d)


def texts_digest(docs: Sequence[dict]) -> str:
    h = hashlib.sha256()
    for d in docs:
        h.update(d["id"].encode())
        h.update(b"\0")
        h.update(hashlib.sha256(d["text"].encode()).digest())
    return h.hexdigest()[:24]


def cached(kind: str, identity: str, docs: Sequence[dict], compute: Callable[[], dict[str, np.ndarray]]) -> dict:
    """Per-document arrays (fingerprints, signatures) cached by detector identity and texts."""
    key = hashlib.sha256(f"{kind}\0{identity}\0{texts_digest(docs)}".encode()).hexdigest()[:32]
    path = FP_CACHE / f"{kind}-{key}.npz"
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    out = compute()
    FP_CACHE.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def _workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


# -- simpg --------------------------------------------------------------------------------


def _simpg_code_digest() -> str:
    """Digest of simpg's fingerprint code: a change there invalidates cached fingerprints."""
    import simpg.fingerprint

    h = hashlib.sha256()
    root = Path(simpg.fingerprint.__file__).resolve().parent
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".txt", ".json", ".gz", ".big", ".idf", ".dict"):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


@register("simpg")
class SimpgDetector:
    """simpg fingerprints (``simpg.fingerprint.fingerprint_many``), pairs within k bits.

    Args:
        config: a ``FingerprintConfig`` or a dict of its settings; None = ``FingerprintConfig()``.
        ks: the radii to report, from one fingerprinting; None = ``[DEFAULT_K]``.
        label: report row prefix.
    """

    name = "simpg"

    def __init__(self, config: Any = None, ks: Sequence[int] | None = None, label: str = "simpg") -> None:
        from simpg.fingerprint import DEFAULT_K, FingerprintConfig

        if isinstance(config, dict):
            config = FingerprintConfig(**config)
        self.config = config or FingerprintConfig()
        self.ks = sorted(set(ks or [DEFAULT_K]))
        self.label = label

    def fingerprints(self, docs: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
        from simpg.fingerprint import fingerprint_many

        def compute() -> dict[str, np.ndarray]:
            fps = np.zeros(len(docs), dtype=np.uint64)
            valid = np.zeros(len(docs), dtype=bool)
            texts = (d["text"] for d in docs)
            for k, fp in enumerate(fingerprint_many(texts, self.config, workers=_workers(), on_error="none")):
                if fp is not None:
                    fps[k] = fp
                    valid[k] = True
            return {"fps": fps, "valid": valid}

        z = cached("simpg", self.config.to_json() + _simpg_code_digest(), docs, compute)
        return z["fps"], z["valid"]

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        started = time.perf_counter()
        fps, valid = self.fingerprints(docs)
        pairs, dist = pairs_within(fps, valid, max(self.ks))
        seconds = time.perf_counter() - started
        params = {"config": json.loads(self.config.to_json()), "identity": self.config.identity}
        return [
            Call(
                label=f"{self.label} k={k}",
                detector=self.name,
                pairs=pairs[dist <= k],
                params={**params, "k": k},
                not_indexed=int((~valid).sum()),
                seconds=seconds,
            )
            for k in self.ks
        ]


# -- the simhash package (PyPI "simhash", 1e0ng) ------------------------------------------


def _simhash_class():
    from simhash import Simhash

    class Simhash64(Simhash):
        """simhash 2.1.2 made to give numpy-1 results under numpy 2.

        ``_bitarray_from_bytes(h) * w`` multiplies a uint8 array by a feature's count; numpy 2
        raises OverflowError for a count > 255 (numpy 1 widened the type). Widening to int64
        first gives the same sums numpy 1 gave, so the fingerprints are the package's own.
        """

        @staticmethod
        def _bitarray_from_bytes(b):
            return np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)

    return Simhash64


_SIMHASH = None


def _simhash_value(text: str) -> int:
    global _SIMHASH
    if _SIMHASH is None:
        _SIMHASH = _simhash_class()
    return _SIMHASH(text).value


@register("simhash")
class SimhashPackageDetector:
    """The PyPI ``simhash`` package with its default features (lowercased ``[\\w\\u4e00-\\u9fcc]+``
    characters joined, 4-character windows, md5, 64 bits); pairs within k bits.

    Args:
        ks: radii; None = ``[3, DEFAULT_K]``.
    """

    name = "simhash"

    def __init__(self, ks: Sequence[int] | None = None, label: str = "simhash pkg") -> None:
        from simpg.fingerprint import DEFAULT_K

        self.ks = sorted(set(ks or [3, DEFAULT_K]))
        self.label = label

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        import importlib.metadata

        started = time.perf_counter()
        version = importlib.metadata.version("simhash")

        def compute() -> dict[str, np.ndarray]:
            texts = [d["text"] for d in docs]
            with multiprocessing.get_context("fork").Pool(_workers()) as pool:
                values = pool.map(_simhash_value, texts, chunksize=16)
            return {"fps": np.array(values, dtype=np.uint64)}

        fps = cached("simhash", f"simhash-{version}-default", docs, compute)["fps"]
        valid = np.ones(len(docs), dtype=bool)
        pairs, dist = pairs_within(fps, valid, max(self.ks))
        seconds = time.perf_counter() - started
        return [
            Call(
                label=f"{self.label} k={k}",
                detector=self.name,
                pairs=pairs[dist <= k],
                params={"k": k, "version": version},
                seconds=seconds,
            )
            for k in self.ks
        ]


# -- MinHash LSH (datasketch) -------------------------------------------------------------

_MH_ARGS: tuple[str, int, int] = ("en", 128, 1)


def _minhash_init(lang: str, num_perm: int, seed: int) -> None:
    global _MH_ARGS
    _MH_ARGS = (lang, num_perm, seed)


def _minhash_values(text: str) -> np.ndarray:
    from datasketch import MinHash

    lang, num_perm, seed = _MH_ARGS
    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch([s.encode("utf-8") for s in sorted(truth_mod.shingles(text, lang))])
    return m.hashvalues


@register("minhash")
class MinHashLSHDetector:
    """datasketch ``MinHashLSH(threshold, num_perm)`` over the truth's own shingles.

    Every candidate pair the LSH index returns is called a duplicate (how dedup users use it);
    with ``verify=True`` a candidate must also have an estimated Jaccard >= threshold.
    """

    name = "minhash"

    def __init__(
        self, threshold: float = 0.8, num_perm: int = 128, seed: int = 1, verify: bool = False, label: str | None = None
    ) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.seed = seed
        self.verify = verify
        self.label = label or f"minhash LSH t={threshold}" + (" +est" if verify else "")

    def run(self, docs: Sequence[dict], lang: str) -> list[Call]:
        import importlib.metadata

        from datasketch import LeanMinHash, MinHash, MinHashLSH

        started = time.perf_counter()
        version = importlib.metadata.version("datasketch")

        def compute() -> dict[str, np.ndarray]:
            texts = [d["text"] for d in docs]
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(_workers(), initializer=_minhash_init, initargs=(lang, self.num_perm, self.seed)) as pool:
                values = pool.map(_minhash_values, texts, chunksize=16)
            return {"hv": np.stack(values)}

        definition = truth_mod.definition_name()  # the shingles are the truth's: SIMPG_TRUTH changes them
        identity = f"datasketch-{version}-{lang}-{self.num_perm}-{self.seed}"
        identity += "" if definition == "default" else f"-{definition}"
        hv = cached("minhash", identity, docs, compute)["hv"]
        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm)
        scheme = MinHash(num_perm=self.num_perm, seed=self.seed).scheme
        sketches = [LeanMinHash(seed=self.seed, hashvalues=hv[k], scheme=scheme) for k in range(len(docs))]
        with lsh.insertion_session() as session:
            for k, m in enumerate(sketches):
                session.insert(k, m, check_duplication=False)
        found = []
        for k, m in enumerate(sketches):
            for j in lsh.query(m):
                if j > k:
                    found.append((k, j))
        pairs = np.array(sorted(found), dtype=np.int64).reshape(-1, 2)
        if self.verify and len(pairs):
            est = (hv[pairs[:, 0]] == hv[pairs[:, 1]]).mean(axis=1)
            pairs = pairs[est >= self.threshold]
        seconds = time.perf_counter() - started
        params = {
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "seed": self.seed,
            "verify": self.verify,
            "version": version,
            "scheme": scheme,
            "bands": lsh.b,
            "rows": lsh.r,
        }
        return [Call(label=self.label, detector=self.name, pairs=pairs, params=params, seconds=seconds)]
