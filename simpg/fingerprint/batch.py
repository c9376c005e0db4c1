"""Batch fingerprinting over worker processes.

``fingerprint_many`` keeps input order, sends documents to workers in chunks
(``Pool.imap``), and builds one :class:`Fingerprinter` per worker in the pool initializer
(for ``lang="zh"`` the jieba tokenizer and IDF dictionary are loaded there too; for
``"auto"`` on the first Chinese text), so there is no per-document setup cost.

Example:
    >>> from simpg.fingerprint import fingerprint
    >>> list(fingerprint_many(["a b c", "d e f"], workers=1)) == [
    ...     fingerprint("a b c"), fingerprint("d e f")]
    True
"""

from __future__ import annotations

import ast
import itertools
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from simpg.fingerprint.api import _config, get_fingerprinter
from simpg.fingerprint.config import FingerprintConfig
from simpg.fingerprint.errors import FingerprintError, InvalidDocument
from simpg.fingerprint.fingerprinter import Document, Fingerprinter

__all__ = [
    "PARALLEL_FROM",
    "fingerprint_many",
    "fingerprint_sketch_and_bands_many",
    "sketch_and_bands_many",
    "sketch_many",
]

#: Below this many documents, worker processes cost more than they save (simpg dedup's
#: default for ``workers``).
PARALLEL_FROM = 1000

OnError = Literal["raise", "none"]

_worker: Fingerprinter | None = None


def _init_worker(config: FingerprintConfig) -> None:
    global _worker
    _worker = Fingerprinter(config)
    if config.lang == "zh":
        _worker.warm_up()


def _run(fp: Fingerprinter, item: tuple[int, Any], on_error: OnError) -> int | None:
    index, doc = item
    try:
        return fp.fingerprint(doc)
    except FingerprintError as exc:
        if on_error == "none":
            return None
        raise type(exc)(f"document {index}: {exc}") from None


def _work(args: tuple[tuple[int, Any], OnError]) -> int | None:
    assert _worker is not None, "worker not initialised"
    item, on_error = args
    return _run(_worker, item, on_error)


def fingerprint_many(
    docs: Iterable[Document],
    config: FingerprintConfig | None = None,
    *,
    workers: int | None = None,
    chunksize: int = 32,
    on_error: OnError = "raise",
    mp_context: str | None = "spawn",
) -> Iterator[int | None]:
    """Fingerprint many documents, in input order, lazily.

    Args:
        docs: documents (anything :meth:`Fingerprinter.fingerprint` accepts).
        config: settings; None means ``FingerprintConfig()``.
        workers: worker processes; None uses ``os.cpu_count()``, 1 runs in this process.
        chunksize: documents sent to a worker at a time.
        on_error: ``"raise"`` re-raises a document's error (the message starts with
            ``document <index>:``); ``"none"`` yields None for that document instead.
        mp_context: multiprocessing start method (``"spawn"`` is safe with threads). Spawned
            workers import the main module again: a call from a script's top level that is
            not under ``if __name__ == "__main__":``, or from ``python -`` (stdin), runs in
            this process instead, with a :class:`RuntimeWarning` saying so (a REPL,
            ``python -c``, a notebook and ``python -m`` use the workers).

    Yields:
        One fingerprint (unsigned int) per document, or None (``on_error="none"``).
    """
    cfg = _config(config, {})
    if on_error not in ("raise", "none"):
        raise InvalidDocument(f"expected on_error 'raise' or 'none', got {on_error!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidDocument(f"expected workers >= 1, got {workers!r}")
    if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
        raise InvalidDocument(f"expected chunksize >= 1, got {chunksize!r}")
    if docs is None or isinstance(docs, (str, bytes)):
        raise InvalidDocument(f"expected an iterable of documents, got {docs!r:.60}")
    items = enumerate(docs)
    if workers == 1:
        fp = get_fingerprinter(cfg)
        for item in items:
            yield _run(fp, item, on_error)
        return
    yield from _imap(_work, ((item, on_error) for item in items), workers, chunksize, mp_context,
                     _init_worker, (cfg,))


def _guarded(tree: ast.Module, line: int) -> bool:
    """Whether ``line`` lies in the body of a top-level ``if __name__ == "__main__":``."""
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], ast.Eq)):
            continue
        sides = [node.test.left, *node.test.comparators]
        names = {n.id for n in sides if isinstance(n, ast.Name)}
        values = {n.value for n in sides if isinstance(n, ast.Constant)}
        if names == {"__name__"} and values == {"__main__"} and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno):
                return True
    return False


def _spawn_would_rerun_main(start_method: str) -> str | None:
    """Why worker processes cannot start from here (a reason to run in this process), or None.

    ``spawn`` and ``forkserver`` workers import the main module again, as ``__mp_main__``
    (multiprocessing's "safe importing of main module"). From a REPL, ``python -c``, a
    notebook or ``python -m package`` nothing of it runs again. From a script, its top
    level runs again in every worker: a call there that is not under
    ``if __name__ == "__main__":`` would start workers from workers, which multiprocessing
    refuses, and the pool would start new ones for ever. From ``python -`` (stdin) the
    workers cannot find the script at all.
    """
    if start_method == "fork":
        return None
    main = sys.modules.get("__main__")
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    path = getattr(main, "__file__", None)
    if main is None or (spec_name is None and path is None):
        return None  # a REPL, python -c, a notebook: the workers import nothing of it
    if spec_name is not None and (spec_name == "__main__" or spec_name.endswith(".__main__")):
        return None  # python -m package: multiprocessing does not run package/__main__.py again
    if spec_name is None and not os.path.isfile(str(path)):
        return (f"worker processes cannot import the main script again ({path}); save it as a file with the "
                "call under 'if __name__ == \"__main__\":' to use them")
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None  # not called while the main module's top level runs: nothing calls it again
    try:
        with open(frame.f_code.co_filename, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return f"cannot read the main script ({path}) to see whether the call is under 'if __name__ == ...'"
    if _guarded(tree, frame.f_lineno):
        return None
    return (f"worker processes would run the script's line {frame.f_lineno} again; put it under "
            "'if __name__ == \"__main__\":' to use them")


def _caller_outside_simpg() -> tuple[str, int]:
    """File and line of the first frame outside simpg: where a warning points."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def _ignore_sigint(initializer: Any, initargs: tuple[Any, ...]) -> None:
    """Workers leave Ctrl-C to the parent, which ends the pool: no traceback from each worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def _start_pool(ctx: Any, workers: int, initializer: Any, initargs: tuple[Any, ...]) -> Any:
    """A pool whose workers ignore SIGINT from birth (inherited across exec) and after their initializer.

    A Ctrl-C reaches the whole process group: the parent alone turns it into
    KeyboardInterrupt and ends the pool, so no worker prints a traceback of its own.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        return ctx.Pool(workers, initializer=_ignore_sigint, initargs=(initializer, initargs))
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)


def _imap(work: Any, items: Iterable[Any], workers: int, chunksize: int, mp_context: str | None,
          initializer: Any = None, initargs: tuple[Any, ...] = ()) -> Iterator[Any]:
    """``work`` over ``items`` in a pool of worker processes, in input order, lazily.

    Where worker processes would run the caller's script again (:func:`_spawn_would_rerun_main`),
    the work runs in this process instead, with one :class:`RuntimeWarning` saying why.
    """
    ctx = multiprocessing.get_context(mp_context)
    reason = _spawn_would_rerun_main(ctx.get_start_method())
    if reason is not None:
        filename, lineno = _caller_outside_simpg()
        warnings.warn_explicit(f"simpg: workers={workers} ignored, running in this process: {reason}",
                               RuntimeWarning, filename, lineno)
        if initializer is not None:
            initializer(*initargs)
        yield from map(work, items)
        return
    pool = _start_pool(ctx, workers, initializer, initargs)
    try:
        yield from pool.imap(work, items, chunksize)
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _each(work: Any, docs: Iterable[Document], workers: int | None, chunksize: int,
          mp_context: str | None) -> Iterator[Any]:
    """``work`` of each document, in input order, lazily: in this process or ``workers`` processes."""
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidDocument(f"expected workers >= 1, got {workers!r}")
    if docs is None or isinstance(docs, (str, bytes)):
        raise InvalidDocument(f"expected an iterable of documents, got {docs!r:.60}")
    if workers == 1:
        return map(work, docs)
    return _imap(work, docs, workers, chunksize, mp_context)


def _sketch_or_none(doc: Any) -> bytes | None:
    from simpg.fingerprint.minhash import sketch

    try:
        return sketch(doc)
    except FingerprintError:
        return None


def sketch_many(
    docs: Iterable[Document],
    *,
    workers: int | None = None,
    chunksize: int = 64,
    mp_context: str | None = "spawn",
) -> Iterator[bytes | None]:
    """The sketch (:func:`simpg.fingerprint.sketch`) of each document, in input order, lazily.

    A document with nothing to sketch (empty, not text) gives None. ``workers``,
    ``chunksize`` and ``mp_context`` as in :func:`fingerprint_many`.
    """
    return _each(_sketch_or_none, docs, workers, chunksize, mp_context)


def _sketch_and_bands_or_none(doc: Any) -> tuple[bytes, tuple[int, ...] | None] | None:
    from simpg.fingerprint.minhash import sketch_and_bands

    try:
        return sketch_and_bands(doc)
    except FingerprintError:
        return None


def sketch_and_bands_many(
    docs: Iterable[Document],
    *,
    workers: int | None = None,
    chunksize: int = 64,
    mp_context: str | None = "spawn",
) -> Iterator[tuple[bytes, tuple[int, ...] | None] | None]:
    """:func:`simpg.fingerprint.minhash.sketch_and_bands` of each document, as :func:`sketch_many`.

    A document with nothing to sketch gives None; one too short for band keys gives
    ``(sketch, None)``.
    """
    return _each(_sketch_and_bands_or_none, docs, workers, chunksize, mp_context)


#: A document's fingerprint, sketch and band keys; None for what it has none of.
Made = tuple[int | None, bytes | None, tuple[int, ...] | None]


#: Documents whose sketches :func:`fingerprint_sketch_and_bands_many` makes together (its
#: numpy work costs about as much per call for a short text as for a chunk of them).
SKETCH_BATCH = 64


def _made(made_fp: int | FingerprintError, made: tuple[bytes, tuple[int, ...] | None] | FingerprintError) -> Made:
    fp = None if isinstance(made_fp, FingerprintError) else made_fp
    if isinstance(made, FingerprintError):
        return fp, None, None
    return fp, made[0], made[1]


def _both(fp: Fingerprinter, docs: list[Any]) -> list[Made]:
    return [_made(*pair) for pair in fp._fingerprint_and_sketch_many(docs)]


def _work_both(docs: list[Any]) -> list[Made]:
    assert _worker is not None, "worker not initialised"
    return _both(_worker, docs)


def _batches(docs: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(docs)
    while batch := list(itertools.islice(it, size)):
        yield batch


def fingerprint_sketch_and_bands_many(
    docs: Iterable[Document],
    config: FingerprintConfig | None = None,
    *,
    workers: int | None = None,
    chunksize: int = 32,
    mp_context: str | None = "spawn",
) -> Iterator[Made]:
    """``(fingerprint, sketch, band keys)`` of each document, in input order, lazily.

    Each document's text is normalised and split once for both
    (:meth:`Fingerprinter.fingerprint_sketch_and_bands`), and the sketches of
    :data:`SKETCH_BATCH` documents at a time are made together; the values are those of
    :func:`fingerprint_many` and :func:`sketch_and_bands_many`. A document without a
    fingerprint (no usable features) or without a sketch (nothing to sketch) gives None
    there; band keys are None also for texts too short to have any. ``workers``,
    ``chunksize`` and ``mp_context`` as in :func:`fingerprint_many`.
    """
    cfg = _config(config, {})
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidDocument(f"expected workers >= 1, got {workers!r}")
    if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
        raise InvalidDocument(f"expected chunksize >= 1, got {chunksize!r}")
    if docs is None or isinstance(docs, (str, bytes)):
        raise InvalidDocument(f"expected an iterable of documents, got {docs!r:.60}")
    if workers == 1:
        fp = get_fingerprinter(cfg)
        return itertools.chain.from_iterable(_both(fp, batch) for batch in _batches(docs, SKETCH_BATCH))
    # A worker gets chunksize documents at a time and sketches them together.
    chunks = _imap(_work_both, _batches(docs, chunksize), workers, 1, mp_context, _init_worker, (cfg,))
    return itertools.chain.from_iterable(chunks)
