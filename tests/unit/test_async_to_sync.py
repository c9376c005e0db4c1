"""simpg/psycopg/index.py is written from aio.py (issue 15, code item 4): never by hand, never stale."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from simpg.psycopg import AsyncPassageColumn, AsyncSimHashColumn, PassageColumn, SimHashColumn
from simpg.psycopg._async_to_sync import HEADER, PAIRS, SOURCE, TARGET, convert


def test_index_py_is_what_aio_py_gives() -> None:
    assert TARGET.read_text(encoding="utf-8") == convert(SOURCE.read_text(encoding="utf-8")), (
        "simpg/psycopg/index.py is stale: run python -m simpg.psycopg._async_to_sync")
    assert [(s.name, t.name) for s, t in PAIRS] == [("aio.py", "index.py"), ("passage_aio.py", "passage_index.py")]
    for source, target in PAIRS:
        assert target.read_text(encoding="utf-8") == convert(source.read_text(encoding="utf-8"), source.name), (
            f"{target} is stale: run python -m simpg.psycopg._async_to_sync")
        assert target.read_text(encoding="utf-8").startswith(f"# Generated from {source.name} ")


@pytest.mark.parametrize("which", [0, 1])
def test_check_exits_1_when_stale(tmp_path, monkeypatch, which: int) -> None:
    from simpg.psycopg import _async_to_sync

    pairs = [(source, tmp_path / target.name) for source, target in PAIRS]
    for (_, copy), (_, target) in zip(pairs, PAIRS, strict=True):
        copy.write_text(target.read_text(encoding="utf-8"), encoding="utf-8")
    stale = pairs[which][1]
    stale.write_text("# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(_async_to_sync, "PAIRS", pairs)
    assert _async_to_sync.main(["--check"]) == 1
    assert _async_to_sync.main([]) == 0
    assert _async_to_sync.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == PAIRS[which][1].read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "simpg.psycopg._async_to_sync", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_rules() -> None:
    source = '''"""Example: >>> await AsyncSimHashColumn(conn).near(1)."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

if True:  # ASYNC
    import asyncio


class AsyncSimHashColumn:
    async def __aenter__(self) -> AsyncSimHashColumn:
        return self

    async def go(self, run: Callable[[], Awaitable[int]],
                 x: int) -> AsyncIterator[int]:
        async with self.conn.transaction():  # a comment stays
            y = await self.call(1,
                                2)
        async for z in self.rows():
            yield await asyncio.to_thread(sum, z, y)

    if True:  # ASYNC
        async def info(self) -> int:
            return await self.read()
    else:
        @property
        def info(self) -> Iterator[int]:
            return self.read()
'''
    expected = '''"""Example: >>> SimHashColumn(conn).near(1)."""

import asyncio
from collections.abc import Callable, Iterator


class SimHashColumn:
    def __enter__(self) -> SimHashColumn:
        return self

    def go(self, run: Callable[[], int],
           x: int) -> Iterator[int]:
        with self.conn.transaction():  # a comment stays
            y = self.call(1,
                          2)
        for z in self.rows():
            yield sum(z, y)

    @property
    def info(self) -> Iterator[int]:
        return self.read()
'''
    assert convert(source) == HEADER + expected


def test_both_passage_handles_have_the_same_methods() -> None:
    public = {name for name in vars(AsyncPassageColumn) if not name.startswith("_")}
    assert {name for name in vars(PassageColumn) if not name.startswith("_")} == public
    assert isinstance(vars(PassageColumn)["info"], property)
    for name in sorted(public - {"info"}):
        sync = dict(inspect.signature(getattr(PassageColumn, name)).parameters)
        assert sync == dict(inspect.signature(getattr(AsyncPassageColumn, name)).parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncPassageColumn, name))


def test_both_handles_have_the_same_methods() -> None:
    public = {name for name in vars(AsyncSimHashColumn) if not name.startswith("_")}
    assert {name for name in vars(SimHashColumn) if not name.startswith("_")} == public
    # info and layout: properties of the sync handle, coroutines of the async one
    assert all(isinstance(vars(SimHashColumn)[name], property) for name in ("info", "layout"))
    for name in sorted(public - {"info", "layout"}):
        sync = dict(inspect.signature(getattr(SimHashColumn, name)).parameters)
        async_ = dict(inspect.signature(getattr(AsyncSimHashColumn, name)).parameters)
        if name == "connect":  # the sync one can poll for answers (a BusyWaitConnection)
            assert sync.pop("busy_wait").default == 0.0
        assert sync == async_, name
        assert inspect.iscoroutinefunction(getattr(AsyncSimHashColumn, name)) != (name in ("pairs", "pair_arrays"))
