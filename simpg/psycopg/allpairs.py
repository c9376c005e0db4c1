"""Moved to :mod:`simpg.allpairs` (the all-pairs engine does not use psycopg); this path keeps working."""

from __future__ import annotations

from simpg.allpairs import (
    CLUSTER_METHODS,
    as_fingerprints,
    clusters,
    component_labels,
    pair_chunks,
    pair_tables,
    pairs_layout,
    permute,
    prefix_masks,
    representative_labels,
    segment_masks,
)

__all__ = [
    "CLUSTER_METHODS",
    "as_fingerprints",
    "clusters",
    "component_labels",
    "pair_chunks",
    "pair_tables",
    "pairs_layout",
    "permute",
    "prefix_masks",
    "representative_labels",
    "segment_masks",
]
