"""A write's vector: computed before its transaction, or beside it on the embedding thread.

One embedding thread per process. With the local model a write's vector is computed there
while its transaction begins (the run's lock and state, admission): OpenVINO and ONNX
Runtime release the GIL, so the two overlap. The transaction then holds the run's lock and
the erasure fence (shared) until the vector is there, which the local model bounds (one
note: ~3 ms, the longest ~40 ms). Not so a remote endpoint's answer: that is asked for
before the transaction. Threads do not survive fork: a process makes its own.

A chain's head embeds the writes its chain carries in one batch before its transaction
(`prefetch_embeddings`). Handing that batch to the embedding thread in small chunks, so that
each write waits only for its own vector, was measured and not kept: with two processes on
two cores the thread only takes the CPU from the writes (docs/decisions.md).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from worker.embeddings import CachedEmbedder, EmbeddingError, computes_in_process
from worker.writes.attempt import Embedding, EmbeddingInFlight, embeddable_text
from worker.writes.operation import WriteDeps
from worker.writes.payloads import WriteRequest, parse_write

__all__ = ["embed_text", "prefetch_embeddings", "start_embedding"]

log = logging.getLogger(__name__)

_embedding_pool: ThreadPoolExecutor | None = None
_embedding_pool_lock = threading.Lock()


def _forget_parent_pool() -> None:
    """In a forked child: the parent's thread is not there, and its lock may have been held."""
    global _embedding_pool, _embedding_pool_lock
    _embedding_pool, _embedding_pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_parent_pool)


def _embedding_thread() -> ThreadPoolExecutor:
    global _embedding_pool
    with _embedding_pool_lock:
        if _embedding_pool is None:
            _embedding_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding")
        return _embedding_pool


def embed_text(deps: WriteDeps, text: str | None) -> Embedding:
    """One text's vector; fails open (no vector) on any embedding error."""
    if text is None or deps.embedder is None:
        return Embedding(None, None, None if text is None else "no embedder configured")
    try:
        [vector] = deps.embedder.embed([text])
    except EmbeddingError as exc:
        return Embedding(None, None, str(exc))
    except Exception as exc:  # fail open: a rare duplicate is recoverable, a lost fact is not
        return Embedding(None, None, f"embedding failed: {type(exc).__name__}")
    return Embedding(vector, deps.embedder.model_name)


def start_embedding(deps: WriteDeps, text: str) -> Embedding | EmbeddingInFlight:
    """The text's vector: at once when this process has it cached (or cannot embed it in
    process), else computed on the embedding thread while the caller goes on."""
    if deps.embedder is None or not computes_in_process(deps.embedder):
        return embed_text(deps, text)
    if isinstance(deps.embedder, CachedEmbedder):
        vector = deps.embedder.cached(text)
        if vector is not None:
            return Embedding(vector, deps.embedder.model_name)
    try:
        return EmbeddingInFlight(_embedding_thread().submit(embed_text, deps, text))
    except RuntimeError:  # the interpreter is shutting down: no new threads
        return embed_text(deps, text)


def prefetch_embeddings(deps: WriteDeps, writes: list[Any]) -> None:
    """Embed a batch of upcoming writes at once; the caches hand the vectors to their tasks.
    Before any transaction (a batch may take a while): each write then finds its vector.

    Batching is several times cheaper per sentence than one call per write. Best effort: a
    failure here only means each write embeds (or fails open) on its own."""
    if deps.embedder is None:
        return
    texts: list[str] = []
    for write in writes:
        request = parse_write(write)
        if isinstance(request, WriteRequest):
            text = embeddable_text(request, deps.settings.max_note_length)
            if text is not None:
                texts.append(text)
    texts = list(dict.fromkeys(texts))
    if len(texts) < 2:
        return
    try:
        deps.embedder.embed(texts)
    except Exception:
        log.debug("embedding prefetch failed", exc_info=True)
