"""The passage-fingerprint config: k-gram length (fixed by the format) and winnowing window.

A table records its config in the comment of its passage column (as the fingerprint
columns record theirs), so a lookup knows which window the stored hashes were made with.

Example:
    >>> config = PassageConfig(window=46)
    >>> config.to_comment()
    'simpg passages: {"format": 1, "k": 5, "window": 46}'
    >>> PassageConfig.from_comment(config.to_comment()) == config
    True
    >>> config.guarantee  # every shared run of this many tokens is found
    50
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from simpg.fingerprint.errors import InvalidConfig

__all__ = ["COMMENT_PREFIX", "DEFAULT_WINDOW", "FORMAT", "K", "PassageConfig"]

#: Tokens per k-gram: fixed in format 1 (the study's choice, docs/partial.md).
K: Final = 5
#: The version of the hashes' definition (tokens, token hash, k-gram combine, winnowing).
FORMAT: Final = 1
#: The default winnowing window: about 41 hashes per 1,000 tokens, every run of 50 tokens found.
DEFAULT_WINDOW: Final = 46
#: How a column comment that records a config starts.
COMMENT_PREFIX: Final = "simpg passages: "


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(f"expected {name} >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class PassageConfig:
    """How a document's passage hashes are made: winnowing with a window of ``window`` k-gram hashes.

    Args:
        window: k-gram hashes per winnowing window (w). Any run of at least
            ``window + K - 1`` equal tokens two documents share gives both a common hash.
    """

    window: int = DEFAULT_WINDOW

    def __post_init__(self) -> None:
        _positive_int("window", self.window)

    @property
    def k(self) -> int:
        """Tokens per k-gram (:data:`K`)."""
        return K

    @property
    def format(self) -> int:
        """The hashes' format (:data:`FORMAT`)."""
        return FORMAT

    @property
    def guarantee(self) -> int:
        """The length in tokens from which every shared run is found: ``window + K - 1``."""
        return self.window + K - 1

    def to_comment(self) -> str:
        """The column comment that records this config: ``simpg passages: {...}``."""
        return COMMENT_PREFIX + json.dumps({"format": FORMAT, "k": K, "window": self.window})

    @classmethod
    def from_comment(cls, comment: str) -> PassageConfig:
        """The config a column comment records (the inverse of :meth:`to_comment`).

        Raises:
            InvalidConfig: the comment is not one :meth:`to_comment` writes, or records
                another format or k.
        """
        if not isinstance(comment, str) or not comment.startswith(COMMENT_PREFIX):
            raise InvalidConfig(f"expected a comment starting with {COMMENT_PREFIX.strip()!r}, got {comment!r:.80}")
        try:
            fields = json.loads(comment[len(COMMENT_PREFIX):])
        except ValueError:
            fields = None
        if not isinstance(fields, dict) or set(fields) != {"format", "k", "window"}:
            raise InvalidConfig(f"expected {{\"format\", \"k\", \"window\"}} in the comment, got {comment!r:.80}")
        if fields["format"] != FORMAT or isinstance(fields["format"], bool):
            raise InvalidConfig(f"unsupported passage format {fields['format']!r}; this simpg reads format {FORMAT}")
        if fields["k"] != K or isinstance(fields["k"], bool):
            raise InvalidConfig(f"unsupported k {fields['k']!r}; format {FORMAT} has k = {K}")
        return cls(window=fields["window"])


def config_or_default(config: PassageConfig | None) -> PassageConfig:
    """``config``, or the default config for None; anything else is an error naming it."""
    if config is None:
        return PassageConfig()
    if not isinstance(config, PassageConfig):
        raise InvalidConfig(f"expected a PassageConfig, got {config!r:.80}")
    return config
