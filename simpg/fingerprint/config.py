"""Fingerprint settings as one immutable, serialisable value with a stable identity.

Two fingerprints are comparable only when they were made with the same settings. A
:class:`FingerprintConfig` holds every setting that changes a fingerprint, serialises to
canonical JSON, and has a short identity such as ``"simpg-fp4:3f9a0c2d41b7e655"``
(``simpg-fp<format version>:`` + the first 16 hex digits of the SHA-256 of its canonical
JSON). Store the identity next to the fingerprints; refuse to compare across identities.

Example:
    >>> cfg = FingerprintConfig(ngram=4)
    >>> cfg.unit, cfg.ngram, cfg.hash
    ('char', 4, 'fnv1a')
    >>> FingerprintConfig(unit="word").ngram
    3
    >>> FingerprintConfig.from_json(cfg.to_json()) == cfg
    True
    >>> cfg.identity == FingerprintConfig(ngram=4).identity != FingerprintConfig().identity
    True
    >>> cfg.identity.startswith("simpg-fp4:")
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from simpg.exc import SimpgError
from simpg.fingerprint.errors import InvalidConfig
from simpg.fingerprint.hashes import HASH_NAMES

__all__ = [
    "DEDUP_K",
    "DEFAULT_FIELDS",
    "FORMAT_VERSION",
    "LANGS",
    "UNITS",
    "WEIGHTINGS",
    "FingerprintConfig",
    "config_for_index",
    "identity_of",
    "stored_config",
]

#: Bumped whenever the same settings could give another fingerprint or sketch, so values
#: of two versions never compare. 2: separators (``_`` included) and runs of more than four
#: identical characters no longer make features. 3: the sketch shingles each
#: script by its own rule (``minhash.SKETCH_VERSION`` 2); fingerprints are those
#: of version 2, sketches and band keys change. 4: a document whose words are mostly prose of
#: a spaced language other than English is sketched by the character 3-grams of its letters
#: (``minhash.SKETCH_VERSION`` 3); fingerprints are those of version 2.
FORMAT_VERSION: Final = 4
#: Default radius: chosen on bench/eval_quality.py's tuning part (docs/benchmarks.md,
#: "Fingerprints alone on a small, clean set").
DEFAULT_K: Final = 4
#: The fingerprint radius of the decision every sketch-confirmed path makes (``simpg dedup``,
#: reports, lookups, the guard): pairs within 4 bits or sharing a band key, confirmed by the
#: sketch. Chosen on bench/quality's tuning part: a larger k gains little with band keys
#: and needs many more prefix tables (docs/fingerprinting.md, "One decision").
DEDUP_K: Final = 4
LANGS: Final = ("auto", "zh", "en")
WEIGHTINGS: Final = ("tf", "binary")
UNITS: Final = ("word", "char")
# Chosen with bench/eval_quality.py (docs/fingerprinting.md): character 5-grams; for word
# shingles, 3 words is the usual choice (2 measured slightly better but needs k >= 6).
DEFAULT_NGRAM: Final = {"char": 5, "word": 3}
DEFAULT_FIELDS: Final = (("body", 1.0), ("headings", 1.5), ("title", 2.0))
_FIELD_NAME: Final = re.compile(r"[a-z][a-z0-9_]{0,31}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _words(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidConfig(f"{name} must be a list of strings, got {value!r}")
    items = list(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise InvalidConfig(f"{name} must contain non-empty strings, got {item!r}")
    return tuple(sorted(set(items)))


def _identity(settings: dict[str, Any]) -> str:
    settings = {k: v for k, v in settings.items() if k != "idf_path"}
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode("ascii")).hexdigest()[:16]
    return f"simpg-fp{settings.get('version')}:{digest}"


def identity_of(stored: str) -> str:
    """The identity of a stored config: its JSON, of any format version, or an identity.

    Indexes record either (``simpg.indexes.fingerprint_config``); configs of an older
    format can no longer be built but still name their identity.

    Example:
        >>> identity_of(FingerprintConfig().to_json()) == FingerprintConfig().identity
        True
        >>> identity_of("simpg-fp1:87fc02debb4e04b3")
        'simpg-fp1:87fc02debb4e04b3'
    """
    try:
        settings = json.loads(stored)
    except ValueError:
        return stored
    return _identity(settings) if isinstance(settings, dict) else stored


@dataclass(frozen=True)
class FingerprintConfig:
    """Every setting that affects a fingerprint.

    Args:
        lang: ``"auto"`` (Han runs go to jieba, the rest to word shingles), ``"zh"`` (the
            whole text to jieba) or ``"en"`` (word shingles only; any space-delimited
            language, not only English).
        unit: for non-Chinese text, ``"word"`` for word n-gram shingles or ``"char"`` for
            character n-grams of the normalised word text (its single spaces included).
        ngram: characters (or words) per n-gram for non-Chinese text; None (the default)
            means 5 for ``unit="char"`` and 3 for ``unit="word"``.
        weighting: ``"tf"`` (a shingle weighs its number of occurrences) or ``"binary"``
            (each distinct shingle once).
        anchored: keep only word shingles containing a stopword (seed 001's defence
            against advertising and boilerplate); needs ``unit="word"``.
        top_n: Chinese terms kept per field, by TF-IDF weight (None keeps all).
        hash: feature hash, ``"fnv1a"``, ``"fnv1"`` or ``"murmur3"``.
        fields: weight per document field, as a mapping or pairs; a plain string document
            is the field ``"body"``.
        hmm: jieba's HMM for unknown words.
        stopwords: Chinese terms never used as features (added to the built-in rules).
        anchor_words: anchor words for ``anchored``; None means the built-in English list.
        idf_path: a user IDF dictionary (``term idf`` lines) instead of jieba's own.
        idf_sha256: digest of ``idf_path``; computed from the file when omitted and
            checked when the dictionary is loaded.
        version: the fingerprint format version.
    """

    lang: str = "auto"
    unit: str = "char"
    ngram: int = None  # type: ignore[assignment]  # resolved per unit in __post_init__
    weighting: str = "tf"
    anchored: bool = False
    top_n: int | None = 256
    hash: str = "fnv1a"
    # Mappings and lists are accepted and stored as sorted tuples (hashable, canonical).
    fields: Mapping[str, float] | Sequence[tuple[str, float]] = field(default=DEFAULT_FIELDS)
    hmm: bool = True
    stopwords: Sequence[str] = ()
    anchor_words: Sequence[str] | None = None
    idf_path: str | None = None
    idf_sha256: str | None = None
    version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not _is_int(self.version) or self.version != FORMAT_VERSION:
            raise InvalidConfig(
                f"unsupported fingerprint format version {self.version!r}; this simpg writes version {FORMAT_VERSION}"
            )
        if self.lang not in LANGS:
            raise InvalidConfig(f"unknown lang {self.lang!r}; expected one of {', '.join(LANGS)}")
        if self.unit not in UNITS:
            raise InvalidConfig(f"unknown unit {self.unit!r}; expected one of {', '.join(UNITS)}")
        if self.ngram is None:
            put(self, "ngram", DEFAULT_NGRAM[self.unit])
        if not _is_int(self.ngram) or not 1 <= self.ngram <= 16:
            raise InvalidConfig(f"ngram must be an integer in [1, 16], got {self.ngram!r}")
        if self.weighting not in WEIGHTINGS:
            raise InvalidConfig(f"unknown weighting {self.weighting!r}; expected one of {', '.join(WEIGHTINGS)}")
        if not isinstance(self.anchored, bool):
            raise InvalidConfig(f"anchored must be true or false, got {self.anchored!r}")
        if self.anchored and self.unit != "word":
            raise InvalidConfig(f"anchored shingles need unit 'word', got unit {self.unit!r}")
        if self.top_n is not None and (not _is_int(self.top_n) or self.top_n < 1):
            raise InvalidConfig(f"top_n must be a positive integer or None, got {self.top_n!r}")
        if self.hash not in HASH_NAMES:
            raise InvalidConfig(f"unknown hash {self.hash!r}; expected one of {', '.join(HASH_NAMES)}")
        put(self, "fields", self._check_fields(self.fields))
        if not isinstance(self.hmm, bool):
            raise InvalidConfig(f"hmm must be true or false, got {self.hmm!r}")
        put(self, "stopwords", _words(self.stopwords, "stopwords"))
        if self.anchor_words is not None:
            put(self, "anchor_words", _words(self.anchor_words, "anchor_words"))
        if self.idf_path is not None:
            if not isinstance(self.idf_path, str) or not self.idf_path:
                raise InvalidConfig(f"idf_path must be a file path, got {self.idf_path!r}")
            if self.idf_sha256 is None:
                from simpg.fingerprint.chinese import file_sha256

                try:
                    put(self, "idf_sha256", file_sha256(self.idf_path))
                except OSError as exc:
                    raise InvalidConfig(f"cannot read idf dictionary {self.idf_path!r}: {exc.strerror}") from None
        if self.idf_sha256 is not None and (
            not isinstance(self.idf_sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", self.idf_sha256)
        ):
            raise InvalidConfig(f"idf_sha256 must be 64 hex digits, got {self.idf_sha256!r}")
        if self.idf_sha256 is not None and self.idf_path is None:
            raise InvalidConfig("idf_sha256 given without idf_path")

    @staticmethod
    def _check_fields(value: Any) -> tuple[tuple[str, float], ...]:
        pairs = list(value.items()) if isinstance(value, Mapping) else value
        if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
            raise InvalidConfig(f"fields must map field names to weights, got {value!r}")
        out: dict[str, float] = {}
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise InvalidConfig(f"fields must map field names to weights, got {pair!r}")
            name, weight = pair
            if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
                raise InvalidConfig(f"field name must match [a-z][a-z0-9_]*, got {name!r}")
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise InvalidConfig(f"field weight must be a number, got {weight!r} for {name!r}")
            if not 0 < float(weight) <= 1e6:
                raise InvalidConfig(f"field weight must be in (0, 1e6], got {weight!r} for {name!r}")
            if name in out:
                raise InvalidConfig(f"duplicate field {name!r}")
            out[name] = float(weight)
        if "body" not in out:
            raise InvalidConfig(f"fields must include 'body', got {sorted(out)!r}")
        return tuple(sorted(out.items()))

    @property
    def field_weights(self) -> dict[str, float]:
        """The field weights as a new dict (``fields`` holds sorted ``(name, weight)`` pairs)."""
        return {name: float(weight) for name, weight in self._field_pairs()}

    def _field_pairs(self) -> tuple[tuple[str, float], ...]:
        fields = self.fields
        assert isinstance(fields, tuple), "canonicalised in __post_init__"
        return fields

    def replace(self, **changes: Any) -> FingerprintConfig:
        """A copy with some settings changed.

        The IDF digest is recomputed with a new path; a new ``unit`` without an ``ngram``
        takes that unit's default n.
        """
        if "idf_path" in changes and "idf_sha256" not in changes:
            changes["idf_sha256"] = None
        if "unit" in changes and "ngram" not in changes:
            changes["ngram"] = None
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every setting."""
        return {
            "anchor_words": None if self.anchor_words is None else list(self.anchor_words),
            "anchored": self.anchored,
            "fields": self.field_weights,
            "hash": self.hash,
            "hmm": self.hmm,
            "idf_path": self.idf_path,
            "idf_sha256": self.idf_sha256,
            "lang": self.lang,
            "ngram": self.ngram,
            "stopwords": list(self.stopwords),
            "top_n": self.top_n,
            "unit": self.unit,
            "version": self.version,
            "weighting": self.weighting,
        }

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces, ASCII only)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_json(cls, data: str | bytes) -> FingerprintConfig:
        """Parse :meth:`to_json` output; unknown keys and bad values raise InvalidConfig."""
        try:
            obj = json.loads(data)
        except (ValueError, TypeError) as exc:
            raise InvalidConfig(f"invalid fingerprint config json: {exc}") from None
        if not isinstance(obj, dict):
            raise InvalidConfig(f"fingerprint config json must be an object, got {obj!r}")
        return cls.from_dict(obj)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> FingerprintConfig:
        """Build from a :meth:`to_dict`-style mapping (missing keys take defaults)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise InvalidConfig(f"unknown fingerprint config keys: {', '.join(unknown)}")
        kwargs = dict(obj)
        if "version" not in kwargs:
            raise InvalidConfig("fingerprint config json has no 'version'")
        for key in ("stopwords", "anchor_words"):
            if isinstance(kwargs.get(key), list):
                kwargs[key] = tuple(kwargs[key])
        return cls(**kwargs)

    @property
    def identity(self) -> str:
        """Stable short identity, e.g. ``"simpg-fp4:3f9a0c2d41b7e655"``.

        Made from every setting except ``idf_path`` (the dictionary counts through its
        digest, so the same file at another path gives the same identity).
        """
        return _identity(self.to_dict())


def stored_config(text: str | None) -> tuple[FingerprintConfig | None, str | None]:
    """An index's recorded fingerprint config (``simpg.indexes.fingerprint_config``) and its identity.

    The config is None when none is recorded, or when the record is an identity string or
    a config of an older format (its identity is still given).
    """
    if not text:
        return None, None
    try:
        config = FingerprintConfig.from_json(text)
    except InvalidConfig:
        return None, identity_of(text)  # an identity string, or a config of an older format
    return config, config.identity


def config_for_index(config: Any, stored: str | None, label: str) -> FingerprintConfig:
    """The config to fingerprint texts with for an index: the given one or the index's, never a mismatch.

    Args:
        config: a FingerprintConfig, or None for the one the index records.
        stored: what the index records (``simpg.indexes.fingerprint_config``), or None.
        label: ``table.column`` of the index, for messages.

    Raises:
        SimpgError: ``config`` differs from the index's, or is None and the index's is
            of another format.
    """
    recorded, identity = stored_config(stored)
    if config is None:
        if identity is not None and recorded is None:
            if not identity.startswith(f"simpg-fp{FORMAT_VERSION}:"):
                raise SimpgError(
                    f"the simpg index on {label} was made with fingerprint config {identity}, of an "
                    f"older format than this simpg's ({FORMAT_VERSION}); move the table to a new config "
                    "with simpg backfill --refingerprint (docs/fingerprinting.md)"
                )
            raise SimpgError(
                f"the simpg index on {label} was made with fingerprint config {identity}; "
                "pass that config to fingerprint texts"
            )
        return recorded or FingerprintConfig()
    if not isinstance(config, FingerprintConfig):
        raise SimpgError(f"expected FingerprintConfig, got {config!r}")
    if identity is not None and config.identity != identity:
        raise SimpgError(
            f"fingerprint config {config.identity} differs from {identity}, "
            f"the one the simpg index on {label} was made with; fingerprint texts with that one, "
            "or move the table to this one with simpg backfill --refingerprint"
        )
    return config
