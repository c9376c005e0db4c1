"""Plain text from the formats the corpus is made of, in pure Python (no groff, no lxml).

* ``roff_to_text``: manual pages roughly as ``man page | col -b`` shows them: the header and
  footer lines ``.TH`` makes, section headings, paragraphs (filled lines joined), no-fill blocks
  kept line by line, tables as rows, and the Tcl/Tk macros ``.BS``/``.BE`` drawn as the lines of
  underscores nroff draws for them. Macro definitions, comments and font changes are dropped.
* ``html_to_text`` / ``html_sections``: visible text of a page (no head, script or style),
  one line per block element; page templates (headers, navigation) are kept, since they are
  what a user who stores the page stores.
* ``mallard_to_text``: GNOME help pages (Mallard XML): title, description, body.
* ``ddtp_descriptions``: Debian package descriptions (Translation-* files).
* ``fortunes``: fortune files (``%`` separated).

Raw visual separators (lines of ``_``, ``-``, ``=``) are kept: they are part of what the
evaluation has to see.
"""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser

from bench.quality.sources import parse_deb822

# -- roff ---------------------------------------------------------------------------------

_NAMED = {
    "em": "—",
    "en": "–",
    "bu": "·",
    "co": "©",
    "rg": "®",
    "tm": "™",
    "aq": "'",
    "dq": '"',
    "lq": "“",
    "rq": "”",
    "oq": "‘",
    "cq": "’",
    "ga": "`",
    "ti": "~",
    "ha": "^",
    "ul": "_",
    "mu": "×",
    "di": "÷",
    "<=": "≤",
    ">=": "≥",
    "->": "→",
    "<-": "←",
    "hy": "-",
    "mi": "-",
    "pl": "+",
    "eq": "=",
    "sl": "/",
    "rs": "\\",
    "ba": "|",
    "br": "|",
    "or": "|",
    "de": "°",
    "sc": "§",
    "ps": "¶",
    "dg": "†",
    "fm": "′",
    "sq": "□",
    "lh": "☜",
    "rh": "☞",
    "+-": "±",
    "aa": "´",
    "a-": "¯",
    "ci": "○",
    "Fo": "«",
    "Fc": "»",
    "fo": "‹",
    "fc": "›",
    "lB": "[",
    "rB": "]",
    "lC": "{",
    "rC": "}",
    "la": "⟨",
    "ra": "⟩",
    "ss": "ß",
    "ct": "¢",
    "Eu": "€",
}
_STRINGS = {"lq": "“", "rq": "”", "Aq": "'", "Tm": "™", "R": "®", "S": "", "C+": "C++", "Lq": "“", "Rq": "”"}
_ESCAPE = re.compile(
    r"""\\(?:
        f(?:\[[^\]]*\]|\(..|.)          # font
      | s(?:\[[^\]]*\]|[+-]?\(..|[+-]?\d\d?|'[^']*')   # size
      | [nmgFkYV](?:\[[^\]]*\]|\(..|.)  # registers, colours, families
      | \*(?:\[(?P<s1>[^\]]*)\]|\((?P<s2>..)|(?P<s3>.))   # strings
      | \((?P<n1>..)                    # named character
      | \[(?P<n2>[^\]]*)\]              # named character, long form
      | l'(?P<line>[^']*)'              # drawn horizontal line
      | [hvwLXbDRoZHSx]'[^']*'          # motions, widths, device controls
      | N'(?P<num>\d+)'                 # character by number
      | z(?P<z>.)                       # zero-width character: keep it
      | (?P<one>.)                      # any other one-character escape
    )""",
    re.VERBOSE,
)
_ONE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "t": "\t", "'": "´", "`": "`", ".": "."}


def _escape(m: re.Match[str]) -> str:
    g = m.groupdict()
    if g["s1"] is not None or g["s2"] is not None or g["s3"] is not None:
        return _STRINGS.get(g["s1"] or g["s2"] or g["s3"] or "", "")
    if g["n1"] is not None or g["n2"] is not None:
        name = g["n1"] or g["n2"] or ""
        if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
            return chr(int(name[1:], 16))
        return _NAMED.get(name, "")
    if g["line"] is not None:
        return "_" * 78 if "ul" in g["line"] or "_" in g["line"] else "-" * 78
    if g["num"] is not None:
        n = int(g["num"])
        return chr(n) if 32 <= n < 0x110000 else ""
    if g["z"] is not None:
        return g["z"]
    if g["one"] is not None:
        return _ONE.get(g["one"], "")
    return ""


def roff_inline(text: str) -> str:
    """Escapes resolved, fonts and motions dropped."""
    text = re.sub(r'(?<!\\)\\".*$', "", text)  # comment to end of line
    return _ESCAPE.sub(_escape, text)


def _args(rest: str) -> list[str]:
    """Macro arguments: blank-separated, double quotes group (``""`` inside is one quote)."""
    out: list[str] = []
    cur: list[str] = []
    started = quoted = False
    i = 0
    while i < len(rest):
        c = rest[i]
        if c == '"':
            if quoted and i + 1 < len(rest) and rest[i + 1] == '"':
                cur.append('"')
                i += 2
                continue
            quoted = not quoted
            started = True
        elif c in " \t" and not quoted:
            if started:
                out.append("".join(cur))
                cur, started = [], False
        elif c == "\\" and i + 1 < len(rest):
            cur.append(rest[i : i + 2])
            started = True
            i += 2
            continue
        else:
            cur.append(c)
            started = True
        i += 1
    if started:
        out.append("".join(cur))
    return out


_SKIP_REQUESTS = set(
    "ad na hy nh ll ps vs ta ft ne in ti ds nr tr cs ss lf pc ev fam hw mk rm als char do ec eo ns rs bp "
    "ad fl cu lt pl po so0 ig0 AS VS VE PD UC DT hc it mso ss cp pso open close write tm ab rr rn am "
    "ti0 defcolor kern lg".split()
)
_PARA = {"PP", "LP", "P", "HP", "sp", "Sp", "SP", "Vb0"}
_BREAK = {"br"}
_JOIN_TWO = {"BR", "BI", "IB", "IR", "RB", "RI", "SB"}
_JOIN_SPACE = {"B", "I", "SM", "CW", "UL", "QW", "PQ", "QR", "Nm", "Ar", "Fl", "Cm", "Op", "Xr", "Pa", "Ev", "Va"}


class _Roff:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.para: list[str] = []
        self.nofill = False
        self.next_is_tag = False
        self.footer = ""

    def flush(self) -> None:
        if self.para:
            self.out.append(" ".join(p for p in self.para if p))
            self.para = []

    def blank(self) -> None:
        self.flush()
        if self.out and self.out[-1] != "":
            self.out.append("")

    def line(self, text: str) -> None:
        self.flush()
        self.out.append(text)

    def text(self, text: str) -> None:
        if self.next_is_tag:
            self.next_is_tag = False
            self.line(text)
            return
        if self.nofill:
            self.line(text)
        else:
            if not text.strip():
                self.blank()
            else:
                self.para.append(text.strip())


def roff_to_text(src: str) -> str | None:
    """Text of a manual page, or None for a ``.so`` redirection (a link to another page)."""
    lines = src.replace("\r\n", "\n").split("\n")
    head = [ln for ln in lines if ln.strip() and not ln.startswith(('.\\"', "'\\\"", '\\"'))]
    if head and len(head) <= 3 and head[0].startswith(".so "):
        return None
    r = _Roff()
    skip_until: str | None = None  # end of a .de/.ig block
    cond_stack: list[bool] = []  # open \{ ... \} blocks: is the block being kept
    table = 0  # 0 outside, 1 in the format lines, 2 in the data
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        while raw.endswith("\\") and not raw.endswith("\\\\") and i < len(lines):  # continuation
            raw = raw[:-1] + lines[i]
            i += 1
        if skip_until is not None:
            if raw.strip() == skip_until or raw.strip().startswith(skip_until + " "):
                skip_until = None
            continue
        # closing a conditional block
        if cond_stack and "\\}" in raw:
            keep = all(cond_stack)
            cond_stack.pop()
            body = raw.replace("\\}", "").strip()
            if not keep or body in ("", ".", "'"):
                continue
            raw = body
        if cond_stack and not all(cond_stack):
            if "\\{" in raw:
                cond_stack.append(False)
            continue
        if raw.startswith(('.\\"', "'\\\"", '\\"')) or raw.strip() in (".", "'"):
            continue
        if table:
            stripped = raw.strip()
            if stripped.startswith(".TE"):
                table = 0
                r.flush()
                continue
            if table == 1:
                if stripped.endswith("."):
                    table = 2
                continue
            if stripped.startswith((".", "'")) and not stripped.startswith((".T&",)):
                continue
            if stripped in ("_", "="):
                r.line(("-" if stripped == "_" else "=") * 40)
                continue
            if stripped.startswith(".T&"):
                table = 1
                continue
            cells = [roff_inline(c).strip() for c in raw.split("\t")]
            cells = [c for c in cells if c not in ("T{", "T}")]
            r.line("  ".join(c.replace("T{", "").replace("T}", "") for c in cells))
            continue
        if raw.startswith((".", "'")):
            body = raw[1:].lstrip()
            name, _, rest = body.partition(" ")
            name = name.strip()
            if "\t" in name:
                name, _, more = name.partition("\t")
                rest = more + " " + rest
            if name in ("if", "ie", "el", "while"):
                keep, rest = _condition(name, rest, r)
                rest = rest.lstrip()
                if rest.startswith("\\{"):
                    cond_stack.append(keep)
                    rest = rest[2:].lstrip()
                    if rest.endswith("\\}"):
                        cond_stack.pop()
                        rest = rest[:-2]
                    if not keep or not rest.strip() or rest.strip() == "\\":
                        continue
                elif not keep:
                    continue
                lines.insert(i, rest)
                continue
            if name in ("de", "de1", "am", "ig", "dei", "ami"):
                args = _args(rest)
                end = (args[0] if args else "") if name == "ig" else (args[1] if len(args) > 1 else "")
                skip_until = "." + end if end else ".."
                continue
            if name == "so":
                continue
            _request(r, name, rest)
            continue
        r.text(roff_inline(raw))
    r.flush()
    if r.footer:
        r.blank()
        r.out.append(r.footer)
    text = "\n".join(r.out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return text + "\n"


def _condition(name: str, rest: str, r: _Roff) -> tuple[bool, str]:
    if name == "el":
        keep = getattr(r, "_else", False)
        return keep, rest
    rest = rest.lstrip()
    neg = rest.startswith("!")
    if neg:
        rest = rest[1:]
    m = re.match(r"(n|t|o|e|v|'[^']*'[^']*'|\\n\(\.g|\\n\[[^\]]*\]|\\n\(..|\\n.|[dcrmF]\s*\S+|\S+)", rest)
    cond = m.group(0) if m else ""
    rest = rest[len(cond) :]
    if cond == "n":
        keep = True
    elif cond in ("t", "o", "e", "v") or cond.startswith(("d", "c", "r", "m", "F")):
        keep = False
    elif cond.startswith("'"):
        parts = cond.split("'")
        keep = len(parts) >= 3 and parts[1] == parts[2]
    else:
        keep = False
    keep = keep != neg
    if name == "ie":
        r._else = not keep  # type: ignore[attr-defined]
    return keep, rest


def _request(r: _Roff, name: str, rest: str) -> None:
    args = [roff_inline(a) for a in _args(rest)]
    if name == "TH":
        title = args[0] if args else ""
        sec = args[1] if len(args) > 1 else ""
        date = args[2] if len(args) > 2 else ""
        source = args[3] if len(args) > 3 else ""
        manual = args[4] if len(args) > 4 else ""
        left = f"{title}({sec})" if sec else title
        r.line(f"{left}  {manual}  {left}".strip())
        r.blank()
        r.footer = f"{source}  {date}  {left}".strip()
    elif name in ("SH", "Sh"):
        r.blank()
        if args:
            r.line(" ".join(args))
        else:
            r.next_is_tag = True
    elif name in ("SS", "Ss"):
        r.blank()
        if args:
            r.line(" ".join(args))
        else:
            r.next_is_tag = True
    elif name in _PARA:
        r.blank()
    elif name in _BREAK:
        r.flush()
    elif name == "TP":
        r.blank()
        r.next_is_tag = True
    elif name in ("IP", "It"):
        r.blank()
        if args and args[0].strip():
            r.line(args[0])
    elif name in ("nf", "EX", "CS", "DS", "SO", "Vb", "Bd"):
        r.flush()
        r.nofill = True
    elif name in ("fi", "EE", "CE", "DE", "SE", "Ve", "Ed"):
        r.flush()
        r.nofill = False
    elif name == "BS":
        r.line("_" * 78)
    elif name == "BE":
        r.line("_" * 65)
    elif name == "AP":
        r.blank()
        r.line("  ".join(a for a in args[:3] if a))
    elif name == "OP":
        r.blank()
        labels = ("Command-Line Name:", "Database Name:", "Database Class:")
        for label, value in zip(labels, args, strict=False):
            r.line(f"{label}\t{value}")
    elif name == "TS":
        r.flush()
    elif name in _JOIN_TWO:
        r.text("".join(args))
    elif name in _JOIN_SPACE or name in ("UR", "UE", "MT", "ME", "SY", "YS", "OP0", "Dl", "Dq", "Sq", "Ql"):
        if args:
            r.text(" ".join(args))
    elif name in _SKIP_REQUESTS or name in ("RS", "RE", "ne", "VS", "VE", "AS", "so", "TE", "IX"):
        pass
    elif len(name) <= 3 and name[:1].isupper():
        # an unknown macro (of a package's own macro set): its arguments are text
        if args:
            r.text(" ".join(args))


# -- HTML ---------------------------------------------------------------------------------

_BLOCK = set(
    "p div h1 h2 h3 h4 h5 h6 li ul ol dl dt dd tr table thead tbody tfoot pre blockquote br hr header "
    "footer nav aside section article main form figure figcaption caption title label button td th".split()
)
_VOID = set("br hr img input meta link area base col embed param source track wbr".split())
_SKIP = {"script", "style", "noscript", "head", "template", "svg"}


class _HTMLText(HTMLParser):
    def __init__(self, drop_classes: tuple[str, ...], split_tags: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, skipping)
        self.drop = set(drop_classes)
        self.split = set(split_tags)
        self.pre = 0

    def skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        if tag in self.split and not self.skipping():
            self.parts.append("\x00")
        skip = self.skipping() or tag in _SKIP or bool(classes & self.drop)
        if tag in _BLOCK:
            self.parts.append("\n")
        if tag not in _VOID:
            self.stack.append((tag, skip))
            if tag == "pre":
                self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skipping():
            return
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
        self.parts.append(data)


def _tidy(text: str) -> str:
    lines = [ln.rstrip() for ln in text.split("\n")]
    out: list[str] = []
    for ln in lines:
        if not ln.strip():
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(ln if ln.startswith("  ") else ln.strip())
    return "\n".join(out).strip() + "\n"


def html_to_text(html: str, drop_classes: tuple[str, ...] = ()) -> str:
    p = _HTMLText(drop_classes, ())
    p.feed(html)
    p.close()
    return _tidy("".join(p.parts))


def html_sections(html: str, split_tags: tuple[str, ...] = ("h2",), drop_classes: tuple[str, ...] = ()) -> list[str]:
    """Text of a page cut before each of ``split_tags`` (a chapter into its sections)."""
    p = _HTMLText(drop_classes, split_tags)
    p.feed(html)
    p.close()
    return [_tidy(part) for part in "".join(p.parts).split("\x00") if part.strip()]


# -- Mallard (GNOME help) -----------------------------------------------------------------

_MAL_BLOCK = set(
    "page section title desc p item steps list terms tree table tr td th note screen code example "
    "synopsis figure media listing quote comment links".split()
)


def mallard_to_text(xml: str) -> str:
    root = ET.fromstring(xml.encode("utf-8") if isinstance(xml, str) else xml)
    parts: list[str] = []

    def local(tag: str) -> str:
        return tag.rsplit("}", 1)[-1]

    def walk(el: ET.Element) -> None:
        tag = local(el.tag) if isinstance(el.tag, str) else ""
        if tag == "info":
            for child in el:
                if local(child.tag) == "desc":
                    parts.append("\n")
                    walk_inner(child)
                    parts.append("\n")
            return
        walk_inner(el, tag)

    def walk_inner(el: ET.Element, tag: str = "") -> None:
        block = tag in _MAL_BLOCK
        if block:
            parts.append("\n")
        if el.text:
            parts.append(el.text if tag in ("screen", "code") else re.sub(r"\s+", " ", el.text))
        for child in el:
            walk(child)
            if child.tail:
                parts.append(re.sub(r"\s+", " ", child.tail))
        if block:
            parts.append("\n")

    walk(root)
    return _tidy("".join(parts))


# -- Debian descriptions, fortunes --------------------------------------------------------


def ddtp_descriptions(text: str, lang: str) -> Iterator[tuple[str, str]]:
    """(package, description text) from a Translation-<lang> file: short line, then the long text."""
    key = f"Description-{lang}"
    for para in parse_deb822(text):
        desc = para.get(key)
        pkg = para.get("Package")
        if not desc or not pkg:
            continue
        first, _, long = desc.partition("\n")
        body = []
        for ln in long.split("\n"):
            ln = ln[1:] if ln.startswith(" ") else ln
            body.append("" if ln.strip() == "." else ln)
        out = first.strip() + ("\n" + "\n".join(body).strip() if "".join(body).strip() else "")
        yield pkg, out.strip() + "\n"


def fortunes(text: str) -> list[str]:
    """The entries of a fortune file; terminal colour codes (ESC[...m) removed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [chunk.strip("\n") + "\n" for chunk in re.split(r"^%\s*$", text, flags=re.M) if chunk.strip()]


# -- gettext catalogues (.mo) -------------------------------------------------------------


def mo_entries(raw: bytes) -> list[tuple[str, str]]:
    """(msgid, msgstr) of every entry of a GNU gettext ``.mo`` file, in file order (the header's msgid is '')."""
    if raw[:4] == b"\xde\x12\x04\x95":
        order = "<"
    elif raw[:4] == b"\x95\x04\x12\xde":
        order = ">"
    else:
        raise ValueError("not a .mo file")
    n, orig, trans = struct.unpack(order + "3I", raw[8:20])
    out = []
    for k in range(n):
        olen, ooff = struct.unpack(order + "2I", raw[orig + 8 * k : orig + 8 * k + 8])
        tlen, toff = struct.unpack(order + "2I", raw[trans + 8 * k : trans + 8 * k + 8])
        msgid = raw[ooff : ooff + olen].decode("utf-8", "replace")
        out.append((msgid, raw[toff : toff + tlen].decode("utf-8", "replace")))
    return out


def mo_strings(raw: bytes) -> str:
    """The translated strings of a GNU gettext ``.mo`` catalogue, one per line, in catalogue order.

    The header entry (empty msgid) is left out; the forms of a plural entry are separate lines.
    A program's translated user interface, as its translators wrote it (the ``ui-strings`` kind).
    """
    lines = [form.strip() for msgid, msgstr in mo_entries(raw) if msgid for form in msgstr.split("\x00")
             if form.strip()]
    return "\n".join(lines) + "\n" if lines else ""
