"""One-call helpers over a cached :class:`Fingerprinter` per config.

Example:
    >>> fingerprint("a b c d") == fingerprint_features(features("a b c d"))
    True
    >>> features("one two three four", unit="word", ngram=2)
    [('one two', 1.0), ('two three', 1.0), ('three four', 1.0)]
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from simpg.fingerprint.config import FingerprintConfig
from simpg.fingerprint.errors import InvalidDocument
from simpg.fingerprint.fingerprinter import Document, Fingerprinter

__all__ = ["features", "fingerprint", "fingerprint_features", "fingerprint_sketch_and_bands", "get_fingerprinter"]


@lru_cache(maxsize=32)
def get_fingerprinter(config: FingerprintConfig | None = None) -> Fingerprinter:
    """A shared :class:`Fingerprinter` for ``config`` (cached per config value)."""
    return Fingerprinter(config)


def _config(config: FingerprintConfig | None, overrides: dict[str, Any]) -> FingerprintConfig:
    if config is None:
        return FingerprintConfig(**overrides)
    if not isinstance(config, FingerprintConfig):
        raise InvalidDocument(f"expected FingerprintConfig, got {config!r}")
    return config.replace(**overrides) if overrides else config


def fingerprint(doc: Document, config: FingerprintConfig | None = None, **overrides: Any) -> int:
    """Fingerprint one document (see :meth:`Fingerprinter.fingerprint`).

    Args:
        doc: text, UTF-8 bytes or a mapping of fields.
        config: settings; None means ``FingerprintConfig()``.
        **overrides: settings changed from ``config``, e.g. ``lang="zh"``, ``ngram=4``.

    Returns:
        The fingerprint, an unsigned int in ``[0, 2**64)``.
    """
    return get_fingerprinter(_config(config, overrides)).fingerprint(doc)


def fingerprint_sketch_and_bands(
    doc: Document, config: FingerprintConfig | None = None, **overrides: Any
) -> tuple[int, bytes, tuple[int, ...] | None]:
    """``(fingerprint(doc, config), *sketch_and_bands(doc))`` in one pass over the text.

    See :meth:`Fingerprinter.fingerprint_sketch_and_bands`: the same values, bit for bit,
    the text normalised and split once.
    """
    return get_fingerprinter(_config(config, overrides)).fingerprint_sketch_and_bands(doc)


def features(doc: Document, config: FingerprintConfig | None = None, **overrides: Any) -> list[tuple[str, float]]:
    """The ``(feature string, weight)`` pairs of a document (see :meth:`Fingerprinter.features`)."""
    return get_fingerprinter(_config(config, overrides)).features(doc)


def fingerprint_features(
    pairs: Iterable[tuple[str | bytes | int, float]],
    config: FingerprintConfig | None = None,
    **overrides: Any,
) -> int:
    """Fingerprint of caller-made ``(feature, weight)`` or ``(feature hash, weight)`` pairs.

    Only the config's ``hash`` matters here (it hashes ``str``/``bytes`` features).
    """
    return get_fingerprinter(_config(config, overrides)).fingerprint_features(pairs)
