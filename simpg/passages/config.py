"""The passage-fingerprint config: k-gram length (fixed by the format) and the winnowing windows.

A text is winnowed with windows weighted by script (:mod:`simpg.passages.winnow`): a k-gram
whose first token is a letter of a spaceless script (Chinese, Japanese, Thai...: a token is
one character there, so a passage of 100 characters is 100 tokens) weighs ``window``, any
other k-gram (a token is a word) ``spaceless_window``, and a window is the k-grams whose
weights first reach ``window * spaceless_window``: ``window`` k-grams over words,
``spaceless_window`` over characters, in between for a mix. A window's extent depends only
on the k-grams inside it, so two texts sharing a run of ``max(window, spaceless_window) + K
- 1`` tokens both select the minimum of the window it holds: that is the guarantee of a
table, for stored rows and looked-up texts alike (winnowed the same way; docs/partial.md).
A run of spaced words is found from ``window + K - 1`` tokens, inside a Chinese text too.

A table records its config in the comment of its passage column (as the fingerprint
columns record theirs), so a lookup knows which windows the stored hashes were made with.
A comment of one window (simpg before the second window) means both windows equal: plain
winnowing with that window.

Example:
    >>> config = PassageConfig(window=22, spaceless_window=46)
    >>> config.to_comment()
    'simpg passages: {"format": 1, "k": 5, "window": 22, "spaceless_window": 46}'
    >>> PassageConfig.from_comment(config.to_comment()) == config
    True
    >>> PassageConfig.from_comment('simpg passages: {"format": 1, "k": 5, "window": 46}')
    PassageConfig(window=46, spaceless_window=46)
    >>> config.guarantee  # every shared run of this many tokens is found
    50
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from simpg.fingerprint.errors import InvalidConfig

__all__ = ["COMMENT_PREFIX", "DEFAULT_SPACELESS_WINDOW", "DEFAULT_WINDOW", "FORMAT", "K", "PassageConfig"]

#: Tokens per k-gram: fixed in format 1 (the study's choice, docs/partial.md).
K: Final = 5
#: The version of the hashes' definition (tokens, token hash, k-gram combine, winnowing).
FORMAT: Final = 1
#: The default window over spaced words (k-grams per window): about 79 hashes per 1,000 tokens of
#: English (1.18x window 26's 67; bench/passages_density.py), every shared run of 26 words found;
#: recall of passages of 50-99 words with 10% of them edited >= 0.95 in English and in mixed-script
#: documents, where 26 gave 0.919 (docs/partial.md, "Two windows, by script").
DEFAULT_WINDOW: Final = 22
#: The default window over letters of spaceless scripts (tokens are characters): about 45 hashes
#: per 1,000 tokens of Chinese documents (their Latin words take the window over words), which keeps
#: a Chinese index under half the bytes of its text (3 bytes a token).
DEFAULT_SPACELESS_WINDOW: Final = 46
#: How a column comment that records a config starts.
COMMENT_PREFIX: Final = "simpg passages: "


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(f"expected {name} >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class PassageConfig:
    """How a text's passage hashes are made: winnowing its k-gram hashes with windows weighted by script.

    Args:
        window: k-gram hashes per winnowing window over words of spaced scripts.
        spaceless_window: the same over letters of spaceless scripts; a window over a mix
            is in between (its k-grams' weights reach ``window * spaceless_window``). Any
            run of at least :attr:`guarantee` equal tokens two texts share gives both a
            common hash.
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

        Exact for any two texts, stored or looked up (both winnowed the same way). A run of
        spaced words is found from ``window + K - 1`` tokens and one of spaceless letters
        from ``spaceless_window + K - 1``; a run mixing both somewhere between. A lookup
        cannot know the script of a run before finding it, so one guarantee holds for the
        table.
        """
        return max(self.window, self.spaceless_window) + K - 1

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
