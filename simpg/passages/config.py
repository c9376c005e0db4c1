"""The passage-fingerprint config: k-gram length (fixed by the format) and the winnowing windows.

A document is winnowed with one of two windows, chosen by its script: ``spaceless_window``
when at least half of its tokens are letters of a spaceless script (Chinese, Japanese,
Thai...: a token is one character there, so a passage of 100 characters is 100 tokens and
a window this large keeps the index small), ``window`` otherwise (a token is a word). A
lookup winnows its text with the smaller window: winnowing with windows w1 <= w2 still
gives two documents a common hash for every shared run of w2 + K - 1 tokens (the minimum
of a w2-window is the minimum of every w1-window inside it that holds it), so the
guarantee of a table is ``max(window, spaceless_window) + K - 1`` (docs/partial.md).

A table records its config in the comment of its passage column (as the fingerprint
columns record theirs), so a lookup knows which windows the stored hashes were made with.
A comment of one window (simpg before the second window) means both windows equal.

Example:
    >>> config = PassageConfig(window=26, spaceless_window=46)
    >>> config.to_comment()
    'simpg passages: {"format": 1, "k": 5, "window": 26, "spaceless_window": 46}'
    >>> PassageConfig.from_comment(config.to_comment()) == config
    True
    >>> PassageConfig.from_comment('simpg passages: {"format": 1, "k": 5, "window": 46}')
    PassageConfig(window=46, spaceless_window=46)
    >>> config.guarantee  # every shared run of this many tokens is found
    50
    >>> config.window_for(0.7), config.window_for(0.2), config.query_window
    (46, 26, 26)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from simpg.fingerprint.errors import InvalidConfig

__all__ = ["COMMENT_PREFIX", "DEFAULT_SPACELESS_WINDOW", "DEFAULT_WINDOW", "FORMAT", "K", "SPACELESS_SHARE",
           "PassageConfig"]

#: Tokens per k-gram: fixed in format 1 (the study's choice, docs/partial.md).
K: Final = 5
#: The version of the hashes' definition (tokens, token hash, k-gram combine, winnowing).
FORMAT: Final = 1
#: The default window of spaced documents (tokens are words): about 74 hashes per 1,000 tokens;
#: recall of passages of 50 words with 10% of them edited >= 0.95 (docs/partial.md, "Two windows").
DEFAULT_WINDOW: Final = 26
#: The default window of spaceless documents (tokens are characters): about 41 hashes per 1,000
#: tokens, which keeps a Chinese index under half the bytes of its text (3 bytes a token).
DEFAULT_SPACELESS_WINDOW: Final = 46
#: A document whose tokens are at least this share letters of a spaceless script is winnowed
#: with ``spaceless_window`` (the design study's rule, bench/quality/partial.py).
SPACELESS_SHARE: Final = 0.5
#: How a column comment that records a config starts.
COMMENT_PREFIX: Final = "simpg passages: "


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(f"expected {name} >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class PassageConfig:
    """How a document's passage hashes are made: winnowing its k-gram hashes with a window chosen by its script.

    Args:
        window: k-gram hashes per winnowing window (w) of a document of a spaced script.
        spaceless_window: the same for a document whose tokens are mostly (at least
            :data:`SPACELESS_SHARE`) letters of a spaceless script. Any run of at least
            :attr:`guarantee` equal tokens two documents share gives both a common hash.
    """

    window: int = DEFAULT_WINDOW
    spaceless_window: int = DEFAULT_SPACELESS_WINDOW

    def __post_init__(self) -> None:
        _positive_int("window", self.window)
        _positive_int("spaceless_window", self.spaceless_window)

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
        """The length in tokens from which every shared run is found: ``max(window, spaceless_window) + K - 1``.

        Exact for any two documents and for a text looked up (winnowed with
        :attr:`query_window`) against any stored one. Two spaced documents share a hash for
        every run of ``window + K - 1`` tokens already, but a lookup cannot know beforehand
        which stored rows are spaced, so one guarantee holds for the table.
        """
        return max(self.window, self.spaceless_window) + K - 1

    @property
    def query_window(self) -> int:
        """The window a looked-up text is winnowed with: the smaller one, which finds documents of either."""
        return min(self.window, self.spaceless_window)

    def window_for(self, spaceless_share: float) -> int:
        """The window of a document whose tokens are this share letters of a spaceless script."""
        return self.spaceless_window if spaceless_share >= SPACELESS_SHARE else self.window

    def to_comment(self) -> str:
        """The column comment that records this config: ``simpg passages: {...}``."""
        return COMMENT_PREFIX + json.dumps({"format": FORMAT, "k": K, "window": self.window,
                                            "spaceless_window": self.spaceless_window})

    @classmethod
    def from_comment(cls, comment: str) -> PassageConfig:
        """The config a column comment records (the inverse of :meth:`to_comment`).

        A comment without ``spaceless_window`` (simpg before the second window) means both
        windows equal.

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
        if not isinstance(fields, dict) or set(fields) - {"spaceless_window"} != {"format", "k", "window"}:
            raise InvalidConfig(f"expected {{\"format\", \"k\", \"window\", \"spaceless_window\"}} in the comment, "
                                f"got {comment!r:.80}")
        if fields["format"] != FORMAT or isinstance(fields["format"], bool):
            raise InvalidConfig(f"unsupported passage format {fields['format']!r}; this simpg reads format {FORMAT}")
        if fields["k"] != K or isinstance(fields["k"], bool):
            raise InvalidConfig(f"unsupported k {fields['k']!r}; format {FORMAT} has k = {K}")
        spaceless = fields["spaceless_window"] if "spaceless_window" in fields else fields["window"]
        return cls(window=fields["window"], spaceless_window=spaceless)


def config_or_default(config: PassageConfig | None) -> PassageConfig:
    """``config``, or the default config for None; anything else is an error naming it."""
    if config is None:
        return PassageConfig()
    if not isinstance(config, PassageConfig):
        raise InvalidConfig(f"expected a PassageConfig, got {config!r:.80}")
    return config
