"""Scores of a detector's pairs and clusters against the exact truth of one part.

Pairs (every pair of the part counts; none sampled):
    duplicate  J >= 0.8        unrelated  J < 0.5        grey  0.5 <= J < 0.8 (neither)
    precision = called ∩ duplicate / (called ∩ (duplicate ∪ unrelated))    (grey excluded)
    recall    = called ∩ duplicate / duplicate
    unrelated_called = |called ∩ unrelated|: the headline number
Recall per planted edit kind: over the (base, variant) pairs of that kind that are duplicates by
truth. For "rewrite" (must not match): how many of its (base, variant) pairs were called, split by
their truth class.

Clusters (a detector's own, or the connected components of its pairs by default):
    co-clustered pairs = all pairs of documents in one cluster
    pairwise precision = co ∩ duplicate / (co ∩ (duplicate ∪ unrelated)); recall = co ∩ duplicate /
    duplicate; unrelated_share = co ∩ unrelated / co. Counted from the truth list (every pair with
    J >= 0.5 is listed, so any other co-clustered pair is unrelated, exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bench.quality.truth import ShingleMatrix, Truth, pair_keys

EDIT_KINDS = ("format", "tokens", "sentences", "boilerplate", "rewrite")
#: Issue 28: the mixing edits (bench/quality/mixing.py) and ``revision``, the pairs of base
#: documents of one family (one document in two Debian releases), scored like planted pairs.
MORE_KINDS = ("credit", "quote", "wrap", "untranslate", "revision")
J_BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
BIN_NAMES = [f"[{a:.1f},{b:.1f})" for a, b in zip(J_BINS, J_BINS[1:], strict=False)]


class TruthIndex:
    """The truth list sorted by pair key, for membership look-ups."""

    def __init__(self, t: Truth) -> None:
        self.t = t
        keys = t.keys
        order = np.argsort(keys)
        self.keys = keys[order]
        self.inter = t.inter[order]
        self.union = t.union[order]
        self.dup = 5 * self.inter >= 4 * self.union
        self.n_dup = int(self.dup.sum())
        self.n = t.n_docs

    def lookup(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(listed, position) for each pair: listed means J >= 0.5."""
        k = pair_keys(i, j, self.n)
        pos = np.searchsorted(self.keys, k)
        pos = np.minimum(pos, max(0, len(self.keys) - 1))
        listed = (self.keys[pos] == k) if len(self.keys) else np.zeros(len(k), dtype=bool)
        return listed, pos


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _snippet(text: str, n: int = 90) -> str:
    s = " ".join(text.split())
    return s[:n] + ("…" if len(s) > n else "")


def score_pairs(
    pairs: np.ndarray,
    ti: TruthIndex,
    sm: ShingleMatrix,
    docs: Sequence[dict],
    *,
    worst: int = 20,
) -> dict:
    """Pair metrics of one call (see the module docstring)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(pairs):
        keys = np.unique(pair_keys(pairs[:, 0], pairs[:, 1], ti.n))
        i, j = keys // ti.n, keys % ti.n
    else:
        i = j = np.zeros(0, dtype=np.int64)
    listed, pos = ti.lookup(i, j)
    dup = listed & ti.dup[pos] if len(pos) else listed
    grey = listed & ~dup
    unrel = ~listed
    n_dup, n_grey, n_unrel = int(dup.sum()), int(grey.sum()), int(unrel.sum())
    precision = n_dup / (n_dup + n_unrel) if n_dup + n_unrel else 1.0
    recall = n_dup / ti.n_dup if ti.n_dup else 1.0
    # the unrelated pairs called duplicates: exact J, histogram, the worst ones
    ui, uj = i[unrel], j[unrel]
    uj_val = sm.jaccard(ui, uj) if len(ui) else np.zeros(0)
    hist = np.histogram(uj_val, bins=J_BINS)[0].tolist() if len(uj_val) else [0] * (len(J_BINS) - 1)
    order = np.argsort(uj_val, kind="stable")[:worst]
    worst_list = [
        {
            "jaccard": round(float(uj_val[k]), 4),
            "a": docs[ui[k]]["id"],
            "b": docs[uj[k]]["id"],
            "a_text": _snippet(docs[ui[k]]["text"]),
            "b_text": _snippet(docs[uj[k]]["text"]),
        }
        for k in order
    ]
    by_collection: dict[str, int] = {}
    for a, b in zip(ui.tolist(), uj.tolist(), strict=True):
        ca, cb = docs[a]["collection"], docs[b]["collection"]
        key = ca if ca == cb else " + ".join(sorted((ca, cb)))
        by_collection[key] = by_collection.get(key, 0) + 1
    return {
        "called": int(len(i)),
        "called_duplicate": n_dup,
        "called_grey": n_grey,
        "unrelated_called": n_unrel,
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall),
        "unrelated_jaccard_histogram": dict(zip(BIN_NAMES, hist, strict=True)),
        "unrelated_by_collection": dict(sorted(by_collection.items(), key=lambda kv: -kv[1])),
        "worst_unrelated": worst_list,
    }


def planted_pairs(docs: Sequence[dict]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(base index, variant index) arrays per edit kind; ``revision``: base pairs of one family.

    The five kinds of issue 14 are always there; the others only when the part has them.
    """
    where = {d["id"]: k for k, d in enumerate(docs)}
    out: dict[str, tuple[list[int], list[int]]] = {kind: ([], []) for kind in EDIT_KINDS}
    for k, d in enumerate(docs):
        if d.get("edit") and d.get("base") in where:
            out.setdefault(d["edit"], ([], []))
            out[d["edit"]][0].append(where[d["base"]])
            out[d["edit"]][1].append(k)
    families: dict[str, list[int]] = {}
    for k, d in enumerate(docs):
        if d.get("family") and d.get("base") is None:
            families.setdefault(d["family"], []).append(k)
    for members in families.values():
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                out.setdefault("revision", ([], []))
                out["revision"][0].append(a)
                out["revision"][1].append(b)
    order = [*EDIT_KINDS, *MORE_KINDS]
    out = {kind: out[kind] for kind in sorted(out, key=lambda kind: (order.index(kind) if kind in order else 99, kind))}
    return {kind: (np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)) for kind, (a, b) in out.items()}


def score_edits(pairs: np.ndarray, ti: TruthIndex, planted: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    called = np.unique(pair_keys(pairs[:, 0], pairs[:, 1], ti.n)) if len(pairs) else np.zeros(0, dtype=np.int64)
    out = {}
    for kind, (b, v) in planted.items():
        if not len(b):
            out[kind] = {"planted": 0}
            continue
        listed, pos = ti.lookup(b, v)
        dup = listed & ti.dup[pos]
        grey = listed & ~dup
        is_called = np.isin(pair_keys(b, v, ti.n), called)
        row = {
            "planted": int(len(b)),
            "duplicate_by_truth": int(dup.sum()),
            "grey_by_truth": int(grey.sum()),
            "unrelated_by_truth": int((~listed).sum()),
            "found": int((is_called & dup).sum()),
            "recall": float((is_called & dup).sum() / dup.sum()) if dup.sum() else None,
        }
        if kind == "rewrite":
            row["called"] = int(is_called.sum())
            row["called_unrelated"] = int((is_called & ~listed).sum())
            row["called_grey"] = int((is_called & grey).sum())
        out[kind] = row
    return out


# -- clustering ---------------------------------------------------------------------------


def connected_components(n: int, pairs: np.ndarray) -> list[list[int]]:
    """Clusters as the connected components of the pair graph (union-find); singletons omitted."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for x in range(n):
        groups.setdefault(find(x), []).append(x)
    return [g for g in groups.values() if len(g) > 1]


def representative_clusters(n: int, pairs: np.ndarray) -> list[list[int]]:
    """Each document, in index order, joins the earliest representative it is paired with.

    A document paired with no representative becomes one. Every member is paired (called a
    near duplicate) with its cluster's representative; no chaining. Deterministic, incremental.
    """
    neigh: list[list[int]] = [[] for _ in range(n)]
    for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
        neigh[a].append(b)
        neigh[b].append(a)
    rep = [-1] * n
    for x in range(n):
        earlier = [y for y in neigh[x] if y < x and rep[y] == y]
        rep[x] = min(earlier) if earlier else x
    groups: dict[int, list[int]] = {}
    for x in range(n):
        groups.setdefault(rep[x], []).append(x)
    return [g for g in groups.values() if len(g) > 1]


CLUSTERINGS: dict[str, Callable[[int, np.ndarray], list[list[int]]]] = {
    "components": connected_components,
    "representative": representative_clusters,
}


def score_clusters(clusters: Sequence[Sequence[int]], ti: TruthIndex) -> dict:
    label = np.arange(ti.n, dtype=np.int64) + ti.n  # singletons: their own label
    sizes = []
    for c, members in enumerate(clusters):
        label[np.asarray(members, dtype=np.int64)] = c
        sizes.append(len(members))
    co_total = sum(s * (s - 1) // 2 for s in sizes)
    t = ti.t
    same = label[t.i] == label[t.j]
    dup = t.duplicate
    co_dup = int((same & dup).sum())
    co_grey = int((same & ~dup).sum())
    co_unrel = co_total - co_dup - co_grey
    precision = co_dup / (co_dup + co_unrel) if co_dup + co_unrel else 1.0
    recall = co_dup / ti.n_dup if ti.n_dup else 1.0
    return {
        "clusters": len(sizes),
        "clustered_docs": int(sum(sizes)),
        "largest": max(sizes) if sizes else 0,
        "co_clustered_pairs": co_total,
        "co_duplicate": co_dup,
        "co_grey": co_grey,
        "co_unrelated": co_unrel,
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall),
        "unrelated_share": co_unrel / co_total if co_total else 0.0,
    }
