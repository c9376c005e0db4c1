"""The confirming sketch (simpg.fingerprint.sketch): format, estimates, short texts, bad input."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simpg import allpairs
from simpg.fingerprint import EmptyDocument, InvalidDocument, minhash, sketch, sketch_distance
from simpg.fingerprint.errors import DecodeError
from simpg.fingerprint.minhash import (
    MAX_SKETCH_DISTANCE,
    SKETCH_BITS,
    from_sql,
    shingle_hashes,
    similarity,
    to_sql,
)

WORDS = [f"w{n}" for n in range(5000)]


def text(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(n)]


def jaccard(a: str, b: str) -> float:
    x, y = set(shingle_hashes(a).tolist()), set(shingle_hashes(b).tolist())
    return len(x & y) / len(x | y)


def test_pinned_value() -> None:
    """Sketches are stored: the same text must give the same bits in every release of SKETCH_VERSION 3
    (English text: the same bits as SKETCH_VERSION 2)."""
    assert minhash.SKETCH_VERSION == 3
    assert sketch("The quick brown fox jumps over the lazy dog").hex() == (
        "60a7fd63d22ae9e454e0abd8812f919f9563f2efd75f5b15c51dc539f1cac4fe")


def test_pinned_value_of_a_text_with_a_spaceless_script() -> None:
    """Shingled by its letters and digits, Latin included: the same bits as SKETCH_VERSION 1 (0.2.0),
    since every word of it is among spaceless characters."""
    assert sketch("中文文本与 English words 混合：版本 2.0 的说明。").hex() == (
        "cc40f62a3bffe5fbe329ada3a1381dc2f879246b43878cc5660f38ffc860d62f")


ENGLISH = ("The committee met on Tuesday to review the draft of the annual report. After a long discussion "
           "about the budget, the members agreed to move the meeting about the new library to next month, "
           "when the architect can present the plans. The chair thanked the volunteers who organised the "
           "spring fair and asked everyone to send their comments on the draft by Friday, so that the final "
           "version can go to the printer before the end of the month.")
CHINESE = ("本章介绍如何在系统中安装和配置软件包。首先，请确认网络连接正常，然后更新软件包列表。"
           "安装完成后，可以在菜单中找到新的程序，也可以在终端中运行它。如果遇到问题，请查看日志文件，"
           "或者在邮件列表中提问。维护者会尽快回复，并在下一个版本中修正错误。")


def test_a_few_characters_of_another_script_move_a_few_bits() -> None:
    """Issue 28: a Chinese name, comment or Japanese quote in English text, or a Latin term in Chinese
    text, changes the sketch by about its own share of the text, not by half the sketch (0.2.0: ~128 bits)."""
    edits = [
        (ENGLISH, ENGLISH.replace("The chair thanked", "The chair (王小明) thanked")),
        (ENGLISH, ENGLISH + "\n翻译：李四 <translator@example.org>"),
        (ENGLISH, ENGLISH.replace("by Friday,", "by Friday (金曜日までに),")),
        (ENGLISH, ENGLISH + "\n注：此报告尚未定稿。"),
        (CHINESE, CHINESE.replace("运行它", "运行 systemctl start foo 命令")),
        (CHINESE, CHINESE.replace("软件包列表", "软件包列表 (apt-get update)")),
    ]
    for before, after in edits:
        assert sketch_distance(sketch(before), sketch(after)) <= 24, after[-40:]
    # under 0.2.0's rule (a text with a Han character by its letters alone) the name moved it 100 bits or more
    def letters_only(text: str) -> bytes:
        codes = minhash._alnum_codes(minhash._fold(text))
        return minhash._sketch_bits(minhash._minima(np.sort(minhash._shingle_parts(codes[:0], codes[:0], codes)[1])))

    assert sketch_distance(sketch(ENGLISH), letters_only(edits[0][1])) > 100


def test_a_word_shingle_weighs_its_letters() -> None:
    """Word shingles get one element per letter of their words' mean length (1 to WORD_COPIES): a table of
    contents of numbers weighs little beside its words, as in the truth's character 3-grams."""
    assert minhash._extra_copies(np.array([1, 1, 1, 4, 7, 9, 12])).tolist() == [0, 1, 3, 5, 5]
    assert minhash._extra_copies(np.array([8, 8])).tolist() == [0]  # fewer than 3 words: one shingle
    assert len(shingle_hashes("4 1 0 x")) == 2 and len(shingle_hashes("longer words weigh more")) == 5 + 5


def test_english_words_keep_their_word_shingles_beside_a_name() -> None:
    """Words far from spaceless text stay words; words among it go to the characters."""
    def letters(codes: np.ndarray) -> str:
        return "".join(map(chr, codes.tolist()))

    words, lengths, chars = minhash._script_runs(minhash._fold(ENGLISH.replace("The chair", "The chair 王小明")))
    assert "committee" in words and letters(chars) == "王小明" and "chair" in words
    assert lengths.tolist() == [len(w) for w in words]
    words, _, chars = minhash._script_runs(minhash._fold(CHINESE.replace("运行它", "运行 systemctl start foo")))
    assert words == [] and "systemctlstartfoo" in letters(chars)


def test_hard_wrapped_spaceless_text_is_joined() -> None:
    """Issue 28 item 3: a line break that cuts a Latin word in hard-wrapped CJK text joins it again."""
    text = "在终端中运行 systemctl 命令可以启动服务，然后用 journalctl 查看日志。" * 3
    wrapped = "\n".join(text[i:i + 17] for i in range(0, len(text), 17))
    assert "\n" in wrapped and sketch(wrapped) == sketch(text)
    assert minhash._join_wrapped("使用comm\nand命令") == "使用command命令"
    # Korean folded at a fixed width (fold -w cuts its words): shingled by characters, unchanged
    korean = "이 문서는 데비안 시스템에서 패키지를 설치하고 설정하는 방법을 설명합니다. 먼저 네트워크를 확인하십시오."
    assert sketch("\n".join(korean[i:i + 13] for i in range(0, len(korean), 13))) == sketch(korean)
    # elsewhere a line break stays a word boundary
    assert minhash._join_wrapped("first line\nsecond 中文") == "first line\nsecond 中文"
    assert minhash._join_wrapped("中文 word\n 中文") == "中文 word\n 中文"


FRENCH = ("Cette commande affiche la liste des fichiers qui sont dans le répertoire courant. Si l'option est "
          "donnée, les fichiers cachés sont aussi affichés avec leur taille et la date de leur dernière "
          "modification. Le résultat est trié par nom, sauf si une autre clé de tri est demandée sur la ligne "
          "de commande. Les liens symboliques sont suivis pour les répertoires donnés en argument, mais pas pour "
          "ceux que la commande trouve elle-même. En cas d'erreur, un message est écrit sur la sortie d'erreur "
          "et le code de retour est différent de zéro.")


def letter_grams(text: str) -> np.ndarray:
    """The character 3-grams of all letters and digits (the sketch's character stream of the whole text)."""
    codes = minhash._alnum_codes(minhash._fold(text))
    return np.unique(minhash._ngrams(minhash._mix_in_place(codes + minhash._GOLD), 3, minhash._TAG_CHAR))


def test_foreign_prose_is_sketched_by_its_letters() -> None:
    """Issue 28: a revision of a French man page changes inflections and articles, which moves its word
    3-shingles (here 53 bits by words) more than its character 3-grams, the truth of those languages."""
    revised = (FRENCH.replace("la liste des fichiers", "la liste de fichiers").replace("cachés", "masqués")
               .replace("leur dernière modification", "leurs dernières modifications")
               .replace("est trié", "sera trié").replace("suivis", "suivies")
               .replace("un message est écrit", "un message sera écrit"))
    assert np.array_equal(shingle_hashes(FRENCH), letter_grams(FRENCH))
    assert sketch_distance(sketch(FRENCH), sketch(revised)) <= MAX_SKETCH_DISTANCE

    def by_words(text: str) -> bytes:
        return minhash._sketch_bits(minhash._minima(np.sort(minhash._token_shingles(*minhash._tokens(
            minhash._fold(text))))))

    assert sketch_distance(by_words(FRENCH), by_words(revised)) > MAX_SKETCH_DISTANCE
    # English, English quoting French, and ASCII text keep their word shingles
    for kept in (ENGLISH, ENGLISH + " « " + FRENCH[:60] + " »", "il file di configurazione della rete"):
        assert not np.array_equal(shingle_hashes(kept), letter_grams(kept)), kept[-30:]


def test_language_gate_equals_the_rule_written_plainly() -> None:
    """minhash._language_gate (hashes, numpy) against the rule over the words themselves, random texts."""
    import re
    import unicodedata

    def fold_all(words: str) -> set[str]:
        return {unicodedata.normalize("NFKC", w).casefold() for w in words.split()}

    foreign, english = fold_all(minhash._FOREIGN_WORDS), fold_all(minhash._ENGLISH_WORDS)
    assert not foreign & english
    pool = [sorted(foreign), sorted(english), ["fichier", "datei", "réseau", "w1", "option", "x_y", "2.0"]]
    rng = random.Random(28)
    for _ in range(400):
        weights = [rng.random() ** 3, rng.random() ** 3, rng.random()]
        words = [rng.choice(rng.choices(pool, weights)[0]) for _ in range(rng.randint(0, 60))]
        folded = minhash._fold(" ".join(words).upper() if rng.random() < 0.2 else " ".join(words))
        tokens = re.findall(r"\w+", folded)
        theirs, ours = sum(w in foreign for w in tokens), sum(w in english for w in tokens)
        gated = not folded.isascii() and 100 * theirs >= minhash.FOREIGN_SHARE * len(tokens) > 0 and theirs > ours
        words_h, lengths, codes = minhash._language_gate(minhash._tokens(folded), folded)
        if gated:
            assert len(words_h) == 0 and len(lengths) == 0, folded
            assert codes.tolist() == minhash._alnum_codes(folded).tolist()
        else:
            assert np.array_equal(words_h, minhash._tokens(folded)[0]), folded
        # a document of several fields is decided on all of them
        cut = folded.find(" ", len(folded) // 2)
        fields = [folded[:cut], folded[cut + 1:]] if cut > 0 else [folded]
        whole = minhash._tokens("\n".join(fields))
        assert all(np.array_equal(a, b) for a, b in zip(minhash._language_gate(whole, fields),
                                                          minhash._language_gate(minhash._tokens(folded), folded),
                                                          strict=True))


def test_latin_words_in_chinese_text_weigh_by_their_characters() -> None:
    """A page and the same page followed by its other languages' names (J = 0.49 over the truth's
    character 3-grams, issue 14's fresh part): word shingles made them 0.75 alike, confirmed."""
    base = ("可选的帮助：展示所期望的行为。当一个议题已经添加到追踪器之后，开发人员会尽快查看并给出回复，"
            "如果需要更多信息，他们会在议题中提问。请耐心等待，并在收到回复后及时补充。")
    more = base + ("\n其他语言：English, Català, Česky, Deutsch, Español, Français, Magyar, Italiano, "
                   "Nederlands, Português.")

    def char3(t: str) -> set[str]:
        letters = [c for c in t.casefold() if c.isalnum()]
        return {"".join(letters[i:i + 3]) for i in range(len(letters) - 2)}

    truth = len(char3(base) & char3(more)) / len(char3(base) | char3(more))
    assert truth < 0.5 and jaccard(base, more) == pytest.approx(truth)
    assert sketch_distance(sketch(base), sketch(more)) > MAX_SKETCH_DISTANCE


def test_distance_estimates_jaccard() -> None:
    rng = random.Random(14)
    errors = []
    for _ in range(200):
        base = text(rng, 300)
        edited = list(base)
        for _ in range(rng.randint(0, 120)):
            edited[rng.randrange(len(edited))] = rng.choice(WORDS)
        a, b = " ".join(base), " ".join(edited)
        errors.append(similarity(sketch_distance(sketch(a), sketch(b))) - jaccard(a, b))
    # 256 one-bit bins: the estimate of J has a standard deviation of about 0.06
    assert abs(float(np.mean(errors))) < 0.02
    assert float(np.std(errors)) < 0.09


def test_normalisation_and_fields() -> None:
    assert sketch("Ｈｅｌｌｏ   WORLD again") == sketch("hello world again")
    assert sketch({"title": "A title", "body": "the body text"}) == sketch("the body text\nA title")
    assert sketch("caf\u00e9 ol\u00e9".encode()) == sketch("caf\u00e9 ol\u00e9")


def test_short_and_unrelated_texts_do_not_collapse() -> None:
    """Texts of one shingle, or that share only separators, stay far apart."""
    shorts = ["hello", "world", "ok", "yes no", "你好", "谢谢", "a b", "x"]
    sketches = [sketch(t) for t in shorts]
    for i in range(len(shorts)):
        for j in range(i + 1, len(shorts)):
            assert sketch_distance(sketches[i], sketches[j]) > 3 * MAX_SKETCH_DISTANCE // 2, (shorts[i], shorts[j])
    line = "_" * 79
    a = f"NAME\n{line}\n这个命令用于创建按钮控件\n{line}"
    b = f"NAME\n{line}\n画布控件实现结构化图形\n{line}"
    assert sketch_distance(sketch(a), sketch(b)) > MAX_SKETCH_DISTANCE


def test_every_bin_is_independent_of_the_others() -> None:
    """The bin number salts each bit: a one-shingle text is not all zeros or all ones."""
    bits = bin(int.from_bytes(sketch("hello"), "big")).count("1")
    assert 80 < bits < 176


def test_bad_input_names_the_value() -> None:
    with pytest.raises(EmptyDocument, match="empty document: no words to sketch: '... !!! ---'"):
        sketch("  ... !!! ---")
    with pytest.raises(InvalidDocument, match="expected str, bytes or mapping, got None"):
        sketch(None)
    with pytest.raises(InvalidDocument, match="expected str or list of str in field 'body', got int"):
        sketch({"body": 5})
    with pytest.raises(DecodeError, match="invalid utf-8 at byte 1"):
        sketch(b"a\xff")
    with pytest.raises(ValueError, match="sketches of different sizes: 32 and 3 bytes"):
        sketch_distance(sketch("a b c"), b"abc")
    with pytest.raises(InvalidDocument, match="expected a sketch of 32 bytes, got b'ab'"):
        to_sql(b"ab")
    with pytest.raises(InvalidDocument, match="expected a bit\\(256\\) string"):
        from_sql("012")


def test_sql_forms_round_trip() -> None:
    s = sketch("some words to sketch here")
    assert to_sql(s) == "x" + s.hex()
    assert from_sql(format(int.from_bytes(s, "big"), f"0{SKETCH_BITS}b")) == s
    assert from_sql(None) is None


def test_confirmed_pairs_match_brute_force() -> None:
    """allpairs.confirmed_pair_chunks against every pair, with equal fingerprints and bits 0 and 63."""
    rng = np.random.default_rng(7)
    n = 400
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    fps[:40] = fps[40:80] ^ (np.uint64(1) << rng.integers(0, 64, size=40).astype(np.uint64))
    fps[80:90] = fps[90]  # one fingerprint, many rows
    fps[100] = np.uint64(1)
    fps[101] = np.uint64(1 << 63) | np.uint64(1)
    raw = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    raw[:60] = raw[60:120]
    raw[:60, :2] ^= np.uint8(0x0F)  # 8 differing bits
    raw[80:85] = raw[90]
    sketches = allpairs.as_sketches(raw)
    for k, t in ((0, 0), (3, 8), (7, 40), (64 // 8, 256)):
        got = {(int(i), int(j), int(d), int(s)) for a, b, c, e in allpairs.confirmed_pair_chunks(fps, raw, k, t)
               for i, j, d, s in zip(a, b, c, e, strict=True)}
        want = set()
        for i in range(n):
            for j in range(i + 1, n):
                d = int(fps[i] ^ fps[j]).bit_count()
                s = int(np.bitwise_count(sketches[i] ^ sketches[j]).sum())
                if d <= k and s <= t:
                    want.add((i, j, d, s))
        assert got == want, (k, t)
    groups = allpairs.clusters(fps, 3, sketches=raw, max_sketch_distance=8, method="components")
    assert [80, 81, 82, 83, 84, 90] in [g.tolist() for g in groups]
    assert all(89 not in g or 90 not in g for g in groups)  # equal fingerprints, unrelated sketches
    with pytest.raises(Exception, match="expected one sketch per fingerprint, got 2 for 400"):
        list(allpairs.confirmed_pair_chunks(fps, raw[:2], 3))
    with pytest.raises(Exception, match="max_sketch_distance must be an integer from 0 to 256, got 300"):
        list(allpairs.confirmed_pair_chunks(fps, raw, 3, 300))


def test_ascii_fast_path_equals_the_regular_expression() -> None:
    """ASCII text is split with bytes.translate; the words must be those of the general path."""
    import re

    from simpg.fingerprint import minhash

    rng = random.Random(3)
    alphabet = "abcXYZ019_ -.,;:!?'\"()[]{}<>/\\\t\n\r\x0b\x0c\x1f\x7f@#$%^&*+=|~`"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
        folded = text.casefold()
        fast = [w.decode() for w in folded.encode().translate(minhash._ASCII_SPLIT).split()]
        assert fast == re.findall(r"\w+", folded) == minhash._WORDS.findall(folded), text


def test_sketch_many_keeps_order_and_gives_none_for_nothing_to_sketch() -> None:
    from simpg.fingerprint import sketch_many

    docs = ["one two three four", "", {"title": "t", "body": "body words here"}, "...", "五六七八九"]
    want = [sketch(docs[0]), None, sketch(docs[2]), None, sketch(docs[4])]
    assert list(sketch_many(docs, workers=1)) == want
    assert list(sketch_many(docs * 40, workers=2, chunksize=7)) == want * 40
    with pytest.raises(InvalidDocument, match="expected workers >= 1, got 0"):
        list(sketch_many(docs, workers=0))


def test_spaceless_code_points_equal_the_regular_expression() -> None:
    """Spaceless characters are picked with a table of code points; it must name those of the character class."""
    from simpg.fingerprint import minhash

    table = minhash._spaceless_table()
    every = "".join(map(chr, range(0x110000)))
    want = {ord(c) for c in minhash._SPACELESS_CHARS.findall(every)}
    assert set(np.flatnonzero(table).tolist()) == want


def test_letters_and_digits_are_str_isalnum() -> None:
    """The character stream holds letters and digits of every script: str.isalnum."""
    every = "".join(map(chr, range(0x110000)))
    assert minhash._alnum_codes(every).tolist() == [c for c in range(0x110000) if chr(c).isalnum()]
    assert minhash._tokens("ab cd_ef")[2].tolist() == []
    # one Han character among 7 letters (12.5% < SPACELESS_SHARE): the words stay words
    words, lengths, codes = minhash._tokens("ab cd_ef 中")
    assert len(words) == 2 and lengths.tolist() == [2, 5] and codes.tolist() == [ord("中")]
    # two among them (22%): the words go to the characters, underscore left out
    words, lengths, codes = minhash._tokens("中文 ab cd_ef")
    assert words.tolist() == [] and codes.tolist() == [ord(c) for c in "中文abcdef"]


def test_script_runs_equal_the_regular_expression_reference() -> None:
    """minhash._script_runs (numpy) against the rule written plainly over minhash._TOKEN's matches."""

    def reference(folded: str) -> tuple[list[str], list[int], list[int]]:
        found = minhash._TOKEN.findall(minhash._join_wrapped(folded))
        weight = [len(w) or 1 for _, w in found]
        spelled = []
        for i, (c, _) in enumerate(found):
            lo, hi = max(i - minhash.SPACELESS_WINDOW, 0), min(i + minhash.SPACELESS_WINDOW + 1, len(found))
            theirs = sum(1 for c2, _ in found[lo:hi] if c2)
            spelled.append(bool(c) or 100 * theirs >= minhash.SPACELESS_SHARE * sum(weight[lo:hi]))
        words = [w for (_, w), s in zip(found, spelled, strict=True) if not s]
        chars = "".join(c or w for (c, w), s in zip(found, spelled, strict=True) if s).replace("_", "")
        return words, [len(w) for w in words], [ord(x) for x in chars]

    rng = random.Random(28)
    alphabet = "ab_1 \n中文カナ한국어ー・々〆\u0301é\u3000.,xyz"
    alphabet += "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(100))
    for _ in range(500):
        text = minhash._fold("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))))
        words, lengths, chars = minhash._script_runs(text)
        assert (words, lengths.tolist(), chars.tolist()) == reference(text), repr(text)
