"""The issue-28 evaluation parts (bench/quality): extraction, edits, families, truth. No downloads."""

from __future__ import annotations

import json
import random
import struct

import pytest

from bench.quality import build_corpus, issue28, metrics, mixing, sources, truth


def make_mo(entries: list[tuple[str, str]]) -> bytes:
    """A little-endian GNU .mo file of ``entries`` (msgid, msgstr), sorted by msgid as msgfmt does."""
    entries = sorted(entries)
    ids = [m.encode() for m, _ in entries]
    strs = [t.encode() for _, t in entries]
    n = len(entries)
    orig, trans = 28, 28 + 8 * n
    data = 28 + 16 * n
    table_o, table_t, blob = [], [], b""
    for b in ids:
        table_o.append((len(b), data + len(blob)))
        blob += b + b"\0"
    for b in strs:
        table_t.append((len(b), data + len(blob)))
        blob += b + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, n, orig, trans, 0, 0)
    return head + b"".join(struct.pack("<2I", *x) for x in table_o + table_t) + blob


MO = make_mo([
    ("", "Content-Type: text/plain; charset=UTF-8\nLast-Translator: Yamada Taro <taro@example.org>\n"),
    ("Files", "ファイル"),
    ("menu\x04Open", "開く"),
    ("%d file\x00%d files", "%d 個のファイル"),
])


def test_mo_bilingual_reads_each_message_then_its_translation() -> None:
    text = mixing.mo_bilingual(MO)
    assert text == "%d file\n%d 個のファイル\n\nFiles\nファイル\n\nOpen\n開く\n"
    assert mixing.mo_translator(MO) == "Yamada Taro"
    with pytest.raises(ValueError, match="not a .mo file"):
        mixing.mo_bilingual(b"not a catalogue at all")


def test_untranslate_keeps_the_messages_and_drops_translations() -> None:
    text = "".join(f"message {k}\ntranslation {k}\n\n" for k in range(40)).rstrip("\n") + "\n"
    out = mixing.untranslate(text, 0.1, random.Random(1))
    assert out is not None
    blocks = out.rstrip("\n").split("\n\n")
    assert [b.split("\n")[0] for b in blocks] == [f"message {k}" for k in range(40)]
    assert sum("\n" not in b for b in blocks) == 4
    assert mixing.untranslate("a\nb\n", 0.1, random.Random(1)) is None  # too short to be a catalogue


def test_hard_wrap_splits_latin_words_inside_cjk_text_and_keeps_the_truth() -> None:
    text = "これは simpg dedup コマンドの説明です。\n二行目"
    wrapped = mixing.hard_wrap(text, 10)
    lines = wrapped.split("\n")
    assert all(sum(mixing.width(c) for c in line) <= 10 for line in lines)
    assert lines[:2] == ["これは sim", "pg dedup "]  # "simpg" cut as fold -w cuts it; kana count 2
    assert wrapped.replace("\n", "") == text.replace("\n", "")
    assert truth.shingles(wrapped, "mixreal") == truth.shingles(text, "mixreal")
    with pytest.raises(ValueError, match="columns must be at least 2, not 1"):
        mixing.hard_wrap(text, 1)


def test_native_names_from_credit_lines() -> None:
    text = (
        "翻译：孙一江 <sunyijiang@gmail.com>\n"
        "이 매뉴얼 페이지의 한국어 번역은 다음에 의해 편집되었습니다: 임종균 <hermes44@secsm.org>\n"
        "简体中文教程翻译版之译制者为梁昌泰 <beos@turbolinux.com.cn>\n"
        "请向 <i18n-zh@googlegroups.com> 报告翻译错误。\n"
        "질문은 <a@b.org>\n"
    )
    assert mixing.native_names(text) == ["孙一江", "임종균"]


def test_credit_and_quote_edits() -> None:
    rng = random.Random(3)
    base = "Erste Zeile\nzweite Zeile\ndritte Zeile\n"
    credited = mixing.plant(base, "credit", "man", rng, ["Hans Muster", "孙一江"], [], [])
    assert credited is not None and "孙一江" in credited and "Hans Muster" not in credited
    quoted = mixing.add_quote(base, "日本語の一文です", rng)
    assert quoted.split("\n")[0] == "Erste Zeile" and "日本語の一文です" in quoted.split("\n")
    assert mixing.quotable_lines("kurz\n日本語の一文です\nEine lange genug Zeile\n", cjk=True) == ["日本語の一文です"]
    assert mixing.plant(base, "wrap", "man", rng, [], [], []) is None  # no CJK: nothing to hard-wrap
    assert mixing.plant(base, "untranslate", "man", rng, [], [], []) is None  # not a catalogue
    with pytest.raises(ValueError, match="unknown edit kind 'nope'"):
        mixing.plant(base, "nope", "man", rng, [], [], [])


def test_section_key_and_cookie_decoding() -> None:
    assert issue28.section_key("1.2.3. Die Paketverwaltung\nText") == "die paketverwaltung"
    assert issue28.section_key("A.1. Glossary") == "glossary"
    raw = "Emacs 入門ガイド -*- coding: iso-2022-jp -*-\n".encode("iso-2022-jp")
    assert issue28.decode_with_cookie(raw) == "Emacs 入門ガイド -*- coding: iso-2022-jp -*-\n"
    assert issue28.decode_with_cookie(b"Ein Text ohne Angabe\n") == "Ein Text ohne Angabe\n"
    assert issue28.decode_with_cookie(b"coding: no-such-codec\n") is None


def test_parts_split_families_not_documents() -> None:
    split = {"tune": 0.4, "heldout": 0.4, "fresh": 0.2}
    parts = [issue28.part_of(f"manpages-de/usr/share/man/de/man1/p{k}.1", split) for k in range(3000)]
    assert issue28.part_of("x/y", split) == issue28.part_of("x/y", split)
    shares = {p: parts.count(p) / len(parts) for p in ("tune", "heldout", "fresh")}
    assert abs(shares["tune"] - 0.4) < 0.04 and abs(shares["heldout"] - 0.4) < 0.04
    assert abs(shares["fresh"] - 0.2) < 0.03


def test_issue28_languages_use_the_mixed_truth_and_their_own_corpus_set() -> None:
    text = "Die Option --force überschreibt 既存のファイル"
    assert truth.shingles(text, "revisions") == truth.shingles(text, "mixed")
    assert truth.shingles(text, "mixreal") == truth.shingles(text, "mixed")
    assert build_corpus.set_of("tune", "mixreal") is build_corpus.ISSUE28
    assert build_corpus.set_of("fresh", "revisions") is build_corpus.ISSUE28
    assert build_corpus.set_of("fresh", "en") is build_corpus.FRESH
    assert build_corpus.set_of("tune") is build_corpus.MAIN
    with pytest.raises(SystemExit, match="unknown part 'other' of mixreal"):
        build_corpus.set_of("other", "mixreal")


def test_revision_pairs_are_scored_like_planted_pairs() -> None:
    docs = [
        {"id": "a/11", "family": "a", "base": None, "edit": None},
        {"id": "a/12", "family": "a", "base": None, "edit": None},
        {"id": "a/13", "family": "a", "base": None, "edit": None},
        {"id": "a/12~wrap", "family": "a", "base": "a/12", "edit": "wrap"},
        {"id": "b/12", "family": "b", "base": None, "edit": None},
    ]
    planted = metrics.planted_pairs(docs)
    assert list(planted)[-2:] == ["wrap", "revision"]
    assert sorted(zip(*(x.tolist() for x in planted["revision"]), strict=True)) == [(0, 1), (0, 2), (1, 2)]
    assert list(zip(*(x.tolist() for x in planted["wrap"]), strict=True)) == [(1, 3)]


def test_manifest_pins_every_package_of_every_release_and_none_of_the_other_parts() -> None:
    manifest = issue28.load_manifest()
    used = {*sources.load_manifest(sources.MANIFEST)["debs"], *sources.load_manifest(sources.FRESH_MANIFEST)["debs"]}
    for coll in manifest["collections"]:
        assert coll["lang"] in build_corpus.ISSUE28.langs
        for release in coll["releases"]:
            for name in coll.get("debs", []):
                spec = manifest["debs"][release][name]
                assert spec["filename"].startswith("pool/main/") and len(spec["sha256"]) == 64
                assert name not in used
            for name in coll.get("indexes", []):
                assert manifest["indexes"][release][name]["path"] == f"dists/{release}/main/i18n/{name}.bz2"
    assert json.loads(issue28.ISSUE28.manifest.read_text())["split"] == {"tune": 0.4, "heldout": 0.4, "fresh": 0.2}
