"""Texts for the passage tests: the study's tokens (the oracle's tokeniser) and random adversarial texts.

A plain module (tests/unit/test_test_layout.py): tests/unit/test_passages.py, test_passage_pairs.py,
tests/integration/test_spark_passages.py, tests/integration/passage_corpus.py and the passage handles' tests share it.
"""

from __future__ import annotations

import random
import re
import unicodedata

#: The study's tokens (bench/quality/truth.py's script-aware rule), written out here.
SPACELESS = ("\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
             "\u3100-\u312f\u31a0-\u31bf\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
             "\u0e00-\u0e7f\u0e80-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff")
STUDY_TOKEN = re.compile(rf"(?:(?=[{SPACELESS}])[^\W_])|[^\W{SPACELESS}]+")


def study_tokens(text: str) -> list[str]:
    # one deliberate difference: simpg folds the final sigma (lower() picks it by the next letter)
    return STUDY_TOKEN.findall(unicodedata.normalize("NFKC", text).lower().replace("ς", "σ"))


#: Spellings of a few words that normalise alike (full-width, ligatures, capitals, combining accents),
#: Han, kana and Thai letters, Greek with a final sigma, and separators.
WORDS = ["the", "The", "ＴＨＥ", "ﬁle", "file", "FILE", "café", "cafe\u0301", "CAFÉ", "naïve", "nai\u0308ve",
         "ΟΔΟΣ", "οδος", "ΣΟΦΟΣ.", "λόγος", "straße", "ǆem", "x", "42", "４２"]
LETTERS = ["中", "文", "字", "の", "カ", "ก", "ข"]
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "。", "，", " - ", "\t"]


def random_text(rng: random.Random, n: int, vocab: list[str] | None = None) -> str:
    parts = []
    for _ in range(n):
        if rng.random() < 0.3:
            parts.append(rng.choice(LETTERS))
            parts.append(rng.choice(["", "", " "]))
        else:
            parts.append(rng.choice(vocab or WORDS))
            parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


#: planted_corpus's spellings that normalise alike (full-width, ligatures, capitals, combining accents), Greek.
PLANTED_WORDS = ["the", "The", "ＴＨＥ", "ﬁle", "file", "FILE", "café", "cafe\u0301", "CAFÉ", "ΟΔΟΣ", "οδος", "x",
                 "42", "４２"]

BOILERPLATE = ("This file is free software; you can redistribute it and/or modify it under the terms of the "
               "license as published by the foundation, either version two of the license, or at your "
               "option any later version, without any warranty whatsoever.")


def planted_corpus(rng: random.Random, n: int) -> list[str]:
    """Random texts, many receiving passages of earlier ones (respelled), some the boilerplate."""
    vocab = [f"w{i}" for i in range(400)] + PLANTED_WORDS
    texts: list[str] = []
    for _ in range(n):
        text = random_text(rng, rng.choice([0, 1, 3, 30, 80, 150]), vocab)
        for _ in range(rng.choice([0, 1, 1, 2])):
            if texts:
                donor = rng.choice(texts)
                words = donor.split()
                if words:
                    s = rng.randrange(len(words))
                    passage = " ".join(words[s:s + rng.randrange(1, 120)])
                    at = rng.randrange(len(text) + 1)
                    text = text[:at] + " " + (passage.upper() if rng.random() < 0.5 else passage) + " " + text[at:]
        if rng.random() < 0.3:
            text = text + "\n" + BOILERPLATE if rng.random() < 0.5 else BOILERPLATE + " " + text
        texts.append(text)
    return texts
