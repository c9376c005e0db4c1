"""Tables with fingerprints, 256-bit sketches and band keys (as simpg backfill --bands makes),
and two Debian copyright files that are alike in form and unrelated in content."""

from __future__ import annotations

import psycopg

from simpg import bits

GPL_TAIL = """License: GPL-2+

License: GPL-2+
 This package is free software; you can redistribute it and/or modify
 it under the terms of the GNU General Public License as published by
 the Free Software Foundation; either version 2 of the License, or
 (at your option) any later version.
 .
 This package is distributed in the hope that it will be useful,
 but WITHOUT ANY WARRANTY; without even the implied warranty of
 MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
 GNU General Public License for more details.
 .
"""
SGML_BASE = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\n"
             "Copyright: 1997-1998 Christian Schwarz <schwarz@debian.org>\n"
             "           1998      Manoj Srivastava <srivasta@debian.org>\n"
             "           2001-2004 Ardo van Rangelrooij <ardo@debian.org>\n"
             "           2010      Michael Banck <mbanck@debian.org>\n"
             "           2012-2016 Helmut Grohne <helmut@subdivi.de>\n"
             "           2016-2020 Joao Eriberto Mota Filho <eriberto@debian.org>\n"
             "           2019      Boyuan Yang <byang@debian.org>\n" + GPL_TAIL +
             " You should have received a copy of the GNU General Public License\n"
             " along with this program. If not, see <https://www.gnu.org/licenses/>\n .\n"
             " On Debian systems, the complete text of the GNU General\n"
             ' Public License version 2 can be found in "/usr/share/common-licenses/GPL-2".\n')
XML_CORE = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\n"
            "Copyright: 2003-2004 Ardo van Rangelrooij <ardo@debian.org>\n"
            "           2004      Adam Di Carlo Adam Di Carlo <aph@debian.org>\n"
            "           2006      Lars Wirzenius <liw@iki.fi>\n"
            "           2007-2009 Daniel Leidert <daniel.leidert@wgdd.de>\n"
            "           2012      Jakub Wilk <jwilk@debian.org>\n"
            "           2012      Marcin Owsiany <porridge@debian.org>\n"
            "           2016      Joseph Herlant\n           2016      Martin Pitt\n"
            "           2016      Mattia Rizzolo <mattia@debian.org>\n"
            "           2016      Santiago Vila\n           2016      Helmut Grohne\n"
            "           2017      Joao Eriberto Mota Filho <eriberto@debian.org>\n" + GPL_TAIL +
            " You should have received a copy of the GNU General Public License\n"
            " along with this program. If not, see <http://www.gnu.org/licenses/>\n .\n"
            " On Debian systems, the complete text of the GNU General Public\n"
            ' License version 2 can be found in "/usr/share/common-licenses/GPL-2".\n')
MAX_SKETCH = 36
BAND_COLUMNS = ("sketch_b0", "sketch_b1", "sketch_b2", "sketch_b3")


def make_sketched(conn: psycopg.Connection, name: str = "docs", k: int = 3) -> None:
    """A table with fingerprints, sketches and band keys (a B-tree each), as simpg backfill --bands makes."""
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, simhash bigint, sketch bit(256), note text, "
                 + ", ".join(f"{c} bigint" for c in BAND_COLUMNS) + ")")
    for c in BAND_COLUMNS:
        conn.execute(f"CREATE INDEX ON {name} ({c})")
    conn.execute(f"SELECT simpg.create_index('{name}', 'simhash', {k}, 5)")


Row = tuple[int | None, int | None, tuple[int | None, ...] | None]  # fingerprint, sketch (256-bit int), bands


def sketch_sql(sketch: int | None) -> str | None:
    return None if sketch is None else "x" + sketch.to_bytes(32, "big").hex()


def insert_sketched(conn: psycopg.Connection, id_: int, row: Row, name: str = "docs") -> None:
    fp, sketch, bands = row
    keys = list(bands) if bands is not None else [None] * 4
    conn.execute(f"INSERT INTO {name} (id, simhash, sketch, {', '.join(BAND_COLUMNS)}) "
                 "VALUES (%s, %s, %s::bit(256), %s, %s, %s, %s)",
                 [id_, None if fp is None else bits.to_db(fp), sketch_sql(sketch), *keys])


def doc_row(text: str) -> Row:
    from simpg.fingerprint import fingerprint, sketch_and_bands

    sketch, bands = sketch_and_bands(text)
    return fingerprint(text), int.from_bytes(sketch, "big"), bands
