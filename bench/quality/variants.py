"""Planted variants of base documents: five kinds of edits, deterministic from a seed.

=============  ====================================================================  ==============
kind           edit                                                                  expected
=============  ====================================================================  ==============
format         whitespace, line breaks, letter case, punctuation only               duplicate
tokens         1-3% of the word tokens substituted, deleted or inserted              duplicate
sentences      5-10% of the sentences (at least one) inserted (from another base     duplicate
               document of the same language) or deleted; needs >= 10 sentences      mostly
boilerplate    10-20% more characters of header / footer / navigation text           duplicate
rewrite        30-50% of the word tokens substituted or deleted                       must NOT match
=============  ====================================================================  ==============

Whether a planted pair is a duplicate is decided by the exact Jaccard truth, not assumed.
Tokens: English ``\\w+`` words; Chinese words from jieba (Chinese words and the Latin words and
numbers inside Chinese text); mixed-script text: each Han / kana character is a token, other
runs of word characters (Korean, Cyrillic, Arabic, Latin words) are tokens. Sentences: lines,
and within a line the pieces ended by ``. ! ?`` (followed by a space) or ``。！？؟``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

KINDS = ("format", "tokens", "sentences", "boilerplate", "rewrite")
MIN_SENTENCES = 10

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_MIXED_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[\W]+")
_EN_TOKEN = re.compile(r"\w+|\W+")
_SENT = re.compile(r"(\n+|(?<=[.!?])[ \t]+|(?<=[。！？؟]))")

BOILER = {
    "en": [
        "Home | Products | Docs | Blog | Pricing | Contact | Sign in",
        "Skip to main content. Menu: Home, News, Downloads, Community, Support",
        "You are here: Home > Documentation > Reference > Manual pages",
        "Copyright 2024 Example Corp. All rights reserved. Privacy Policy | Terms of Use | Cookie settings",
        "Subscribe to our newsletter! Get 20% off your first order. Free shipping on orders over $50.",
        "Share this page: Facebook Twitter LinkedIn Email. Related posts: Top 10 tips, Getting started guide",
        "Was this page helpful? Yes No. Last updated 3 days ago. Report a problem with this page.",
        "We use cookies to improve your experience. By continuing to browse you agree to our use of cookies.",
    ],
    "zh": [
        "首页 | 产品中心 | 新闻动态 | 技术支持 | 关于我们 | 联系我们 | 登录 注册",
        "当前位置：首页 > 文档中心 > 常见问题 > 使用手册",
        "热门推荐：限时优惠 会员专享 新品上市 免费试用 下载客户端",
        "版权所有 © 2024 示例科技有限公司 保留所有权利 京ICP备12345678号 隐私政策 使用条款",
        "扫码关注我们的微信公众号，获取更多精彩内容！新用户注册即送优惠券，全场包邮。",
        "分享到：微信 微博 QQ空间 复制链接。相关阅读：十大技巧 新手入门指南 常见问题解答",
        "本文内容由网友自发贡献，版权归原作者所有，如有侵权请联系删除。",
        "本站使用Cookie以改善您的浏览体验，继续浏览即表示您同意我们使用Cookie。",
    ],
    "ja": [
        "ホーム | 製品情報 | ニュース | サポート | 会社概要 | お問い合わせ | ログイン",
        "現在の位置：ホーム > ドキュメント > よくある質問",
        "Copyright © 2024 サンプル株式会社 All Rights Reserved. プライバシーポリシー | 利用規約",
        "メールマガジンに登録すると、最新情報とお得なクーポンをお届けします。",
        "このページは役に立ちましたか？ はい いいえ 最終更新日：3日前",
    ],
    "ko": [
        "홈 | 제품 소개 | 뉴스 | 고객 지원 | 회사 소개 | 문의하기 | 로그인",
        "현재 위치: 홈 > 문서 > 자주 묻는 질문",
        "Copyright © 2024 예제 주식회사. 모든 권리 보유. 개인정보 처리방침 | 이용약관",
        "뉴스레터를 구독하시면 최신 소식과 할인 쿠폰을 보내 드립니다.",
        "이 페이지가 도움이 되었습니까? 예 아니요 마지막 업데이트: 3일 전",
    ],
    "ru": [
        "Главная | Продукты | Новости | Поддержка | О компании | Контакты | Войти",
        "Вы здесь: Главная > Документация > Часто задаваемые вопросы",
        "© 2024 ООО «Пример». Все права защищены. Политика конфиденциальности | Условия использования",
        "Подпишитесь на нашу рассылку и получите скидку 20% на первый заказ.",
        "Была ли эта страница полезной? Да Нет. Последнее обновление: 3 дня назад.",
    ],
    "ar": [
        "الرئيسية | المنتجات | الأخبار | الدعم | من نحن | اتصل بنا | تسجيل الدخول",
        "أنت هنا: الرئيسية > التوثيق > الأسئلة الشائعة",
        "حقوق النشر © 2024 شركة المثال. جميع الحقوق محفوظة. سياسة الخصوصية | شروط الاستخدام",
        "اشترك في نشرتنا البريدية واحصل على خصم 20٪ على طلبك الأول.",
        "هل كانت هذه الصفحة مفيدة؟ نعم لا. آخر تحديث قبل 3 أيام.",
    ],
}


def script_of(text: str) -> str:
    """The boilerplate pool for a mixed-script document: ja, ko, ru, ar, zh or en."""
    counts = {
        "ja": len(re.findall(r"[\u3040-\u30ff]", text)),
        "ko": len(re.findall(r"[\uac00-\ud7af]", text)),
        "ru": len(re.findall(r"[\u0400-\u04ff]", text)),
        "ar": len(re.findall(r"[\u0600-\u06ff]", text)),
    }
    best = max(counts, key=lambda k: counts[k])
    if counts[best] > 0:
        return best
    return "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"


class Tokenizer:
    """Splits a text into tokens that concatenate back to it; word tokens are the editable ones."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._jieba = None

    def tokens(self, text: str) -> list[str]:
        if self.lang == "en":
            return _EN_TOKEN.findall(text)
        if self.lang == "zh":
            if self._jieba is None:
                import logging

                import jieba

                jieba.setLogLevel(logging.WARNING)
                self._jieba = jieba
            return list(self._jieba.cut(text))
        return _MIXED_TOKEN.findall(text)

    @staticmethod
    def is_word(tok: str) -> bool:
        return any(c.isalnum() for c in tok)


def sentences(text: str) -> list[str]:
    """Alternating [piece, separator, piece, separator, ...]; pieces are the sentences."""
    return _SENT.split(text)


def _format_only(text: str, lang: str, rng: random.Random) -> str:
    if lang == "zh" or (lang == "mixed" and script_of(text) in ("ja", "zh")):
        table = {"，": ",", "。": ". ", "：": ":", "；": ";", "（": "(", "）": ")", "“": '"', "”": '"', "！": "!"}
        back = {v.strip(): k for k, v in table.items()}
        out = []
        for c in text:
            if c in table and rng.random() < 0.5:
                c = table[c]
            elif c in back and rng.random() < 0.3:
                c = back[c]
            elif c == "\n" and rng.random() < 0.5:
                c = "" if rng.random() < 0.5 else " "
            elif c == " " and rng.random() < 0.3:
                c = rng.choice(["", "  ", "\n"])
            out.append(c)
            if "\u4e00" <= c <= "\u9fff" and rng.random() < 0.02:
                out.append(rng.choice(["\n", " "]))
        text = "".join(out)
        return re.sub(r"[A-Za-z]+", lambda m: _case(m.group(0), rng), text)
    words = re.split(r"(\s+)", text)
    out = []
    for w in words:
        if not w:
            continue
        if w.isspace():
            r = rng.random()
            out.append(w if r < 0.6 else rng.choice([" ", "  ", "\t", "\n", " \n"]))
            continue
        w = _case(w, rng)
        if w[-1] in ",;:" and rng.random() < 0.3:
            w = w[:-1]
        elif w[-1] in ".!?" and rng.random() < 0.2:
            w = w[:-1] + rng.choice(["!", ";", " .", "..."])
        out.append(w)
    return "".join(out)


def _case(word: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.08:
        return word.upper()
    if r < 0.16:
        return word.lower()
    if r < 0.22:
        return word.capitalize()
    return word


def _edit_tokens(
    text: str, tok: Tokenizer, rng: random.Random, vocab: Sequence[str], rate: float, *, insert: bool = True
) -> str:
    toks = tok.tokens(text)
    words = [i for i, t in enumerate(toks) if tok.is_word(t)]
    if not words:
        return text
    n_edit = max(1, round(rate * len(words)))
    chosen = set(rng.sample(words, min(n_edit, len(words))))
    out = []
    for i, t in enumerate(toks):
        if i not in chosen:
            out.append(t)
            continue
        r = rng.random()
        if r < (1 / 3 if insert else 0.7):
            out.append(rng.choice(vocab))
        elif r < (2 / 3 if insert else 1.0):
            continue
        else:
            out.append(t + _sep(tok.lang, t) + rng.choice(vocab))
    return "".join(out)


def _sep(lang: str, token: str) -> str:
    return "" if lang == "zh" or re.fullmatch(rf"[{_CJK}]", token) else " "


def _edit_sentences(text: str, rng: random.Random, donors: Sequence[str]) -> str | None:
    parts = sentences(text)
    idx = [i for i in range(0, len(parts), 2) if parts[i].strip()]
    if len(idx) < MIN_SENTENCES:
        return None
    n_edit = max(1, round(rng.uniform(0.05, 0.10) * len(idx)))
    pieces = [parts[i] for i in range(0, len(parts), 2)]
    seps = [parts[i] for i in range(1, len(parts), 2)] + [""]
    for _ in range(n_edit):
        live = [i for i, p in enumerate(pieces) if p.strip()]
        if rng.random() < 0.5 and len(live) > 1:
            k = rng.choice(live)
            del pieces[k]
            del seps[k]
        else:
            donor = sentences(rng.choice(donors))
            cands = [donor[i] for i in range(0, len(donor), 2) if len(donor[i].strip()) > 1]
            if not cands:
                continue
            k = rng.randrange(len(pieces) + 1)
            pieces.insert(k, rng.choice(cands).strip())
            seps.insert(k, "\n" if "\n" in "".join(seps) else " ")
    return "".join(p + s for p, s in zip(pieces, seps, strict=True))


def _boilerplate(text: str, lang: str, rng: random.Random) -> str:
    pool = BOILER[lang if lang in BOILER else "en"] if lang != "mixed" else BOILER[script_of(text)]
    budget = max(8, round(rng.uniform(0.10, 0.20) * len(text)))
    lines = pool[:]
    rng.shuffle(lines)
    taken: list[str] = []
    size = 0
    for ln in lines * 4:
        if size >= budget:
            break
        room = budget - size
        if len(ln) > room:
            cut = ln[:room]
            if " " in cut and not re.search(r"[\u3040-\u9fff]", cut):
                cut = cut.rsplit(" ", 1)[0]
            ln = cut
        if ln.strip():
            taken.append(ln)
        size += len(ln) + 1
    k = rng.randint(0, len(taken))
    head, foot = taken[:k], taken[k:]
    out = text
    if head:
        out = "\n".join(head) + "\n" + out
    if foot:
        out = out.rstrip("\n") + "\n" + "\n".join(foot) + "\n"
    return out


def plant(
    text: str,
    kind: str,
    lang: str,
    rng: random.Random,
    tok: Tokenizer,
    vocab: Sequence[str],
    donors: Sequence[str],
) -> str | None:
    """One variant of ``text``; None when the kind does not apply (too few sentences)."""
    if kind == "format":
        return _format_only(text, lang, rng)
    if kind == "tokens":
        return _edit_tokens(text, tok, rng, vocab, rng.uniform(0.01, 0.03))
    if kind == "sentences":
        return _edit_sentences(text, rng, donors)
    if kind == "boilerplate":
        return _boilerplate(text, lang, rng)
    if kind == "rewrite":
        return _edit_tokens(text, tok, rng, vocab, rng.uniform(0.30, 0.50), insert=False)
    raise ValueError(f"unknown variant kind {kind!r}")
