"""Sentence embeddings: all-MiniLM-L6-v2 on CPU by default (OpenVINO; worker/local_embedding/),
or any OpenAI-compatible endpoint.

One embedder per process, built on first use (after the worker has forked). Vectors are
L2-normalized float32 arrays, so cosine similarity is `1 - (a <=> b)` in pgvector. The model
name is stored with every vector and every vector search filters on it: two models' vectors
are never compared.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from worker.local_embedding import (
    LOCAL_EXTRA_MISSING,
    Encoder,
    ModelFilesError,
    missing_install,
    shared_encoder,
)
from worker.local_embedding.model_files import ModelPackageMissing
from worker.ops.embedder_state import report_embedding
from worker.settings import LOCAL_EMBEDDING_MODEL, Settings, get_settings

__all__ = ["LOCAL_EXTRA_MISSING", "Embedder", "EmbedderUnavailable", "EmbeddingError",
           "LocalEmbedder", "build_embedder", "get_embedder", "preload_local_model",
           "warm_local_model"]


class EmbeddingError(RuntimeError):
    """The embedding backend failed; callers on the write path fail open."""


class Embedder(Protocol):
    model_name: str

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]: ...


def _normalized(matrix: np.ndarray) -> list[np.ndarray]:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return list(matrix / norms)


class LocalEmbedder:
    """The local model (worker/local_embedding/): all-MiniLM-L6-v2 by default, on OpenVINO, or
    with MEMORY_EMBEDDING_RUNTIME=onnx on ONNX Runtime, or =torch on sentence-transformers.
    Never touches the network.

    Unset arguments come from the settings of this process (`get_settings()`)."""

    def __init__(self, model_name: str | None = None, *, threads: int | None = None,
                 runtime: str | None = None, model_dir: str | Path | None = None,
                 precision: str | None = None) -> None:
        settings = get_settings() if None in (model_name, threads, runtime, precision) else None
        self.model_name = model_name or (settings.embedding_model if settings
                                         else LOCAL_EMBEDDING_MODEL)
        self.runtime = runtime or (settings.embedding_runtime if settings else "openvino")
        self.threads = threads or (settings.embedding_threads if settings else 1)
        self.precision = precision or (settings.embedding_precision if settings else "bf16")
        if model_dir is None and settings is not None:
            model_dir = settings.embedding_model_dir
        self._encoder = _encoder(self.runtime, self.model_name, model_dir, self.threads,
                                 self.precision)

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder:
        return cls(settings.embedding_model, threads=settings.embedding_threads,
                   runtime=settings.embedding_runtime, model_dir=settings.embedding_model_dir,
                   precision=settings.embedding_precision)

    @property
    def runs_on(self) -> str:
        """The runtime and the precision it chose for this CPU: "openvino, bf16"."""
        return f"{self.runtime}, {getattr(self._encoder, 'precision', 'f32')}"

    def warm_up(self) -> None:
        """Let the runtime prepare what it prepares on first use (OpenVINO: a shape's
        kernels), so that the first writes do not pay for it."""
        warm_up = getattr(self._encoder, "warm_up", None)
        if warm_up is not None:
            warm_up()

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        try:
            matrix = self._encoder.encode(list(texts))
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}") from exc
        return _normalized(matrix)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp...)."""

    def __init__(self, model_name: str, *, base_url: str | None, api_key: str | None,
                 timeout_s: float) -> None:
        import openai

        self.model_name = model_name
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=1
        )

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        try:
            response = self._client.embeddings.create(model=self.model_name, input=list(texts))
            ordered = sorted(response.data, key=lambda item: item.index)
            matrix = np.array([item.embedding for item in ordered], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"embedding endpoint failed: {type(exc).__name__}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbeddingError("embedding endpoint returned a malformed response")
        return _normalized(matrix)

    def close(self) -> None:
        self._client.close()


class ReportingEmbedder:
    """Reports how each call to the backend went, for readiness (worker/ops/embedder_state.py).

    Sits right on the backend, under the caches: a cache hit says nothing about whether the
    model or the endpoint works."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        try:
            vectors = self.inner.embed(texts)
        except EmbeddingError as exc:
            report_embedding(False, str(exc))
            raise
        report_embedding(True)
        return vectors


class CachedEmbedder:
    """LRU in front of an embedder: a write that waits for its sequence is embedded once."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self._size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, text: str) -> np.ndarray | None:
        """The text's vector if this process already has it; never embeds."""
        with self._lock:
            return self._cache.get(text)

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                found[text] = vector
            with self._lock:
                for text in missing:
                    self._cache[text] = found[text]
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return [found[t] for t in texts]


class SharedVectorCache:
    """Vectors shared by every worker process through Redis, keyed by model and text digest.

    The head of a chain embeds its whole chain in one batch (several times cheaper per
    sentence than one at a time) and leaves the vectors here for whichever process runs the
    next writes. Only a batch's vectors are stored (a single text's is its own write's), and
    only vectors, never text."""

    def __init__(self, inner: Embedder, redis_url: str, ttl_s: int) -> None:
        import redis

        self.inner = inner
        self.model_name = inner.model_name
        self._ttl_s = ttl_s
        self._redis = redis.Redis.from_url(redis_url, socket_timeout=0.5,
                                           socket_connect_timeout=0.5)

    def _key(self, text: str) -> str:
        digest = hashlib.sha256(f"{self.model_name}\x1f{text}".encode()).hexdigest()[:40]
        return f"memory:vec:{digest}"

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        keys = [self._key(t) for t in texts]
        try:
            cached = self._redis.mget(keys)
        except Exception:  # the cache is an optimization; never fail a write over it
            cached = [None] * len(texts)
        found = {t: np.frombuffer(raw, dtype=np.float32)
                 for t, raw in zip(texts, cached, strict=True) if isinstance(raw, bytes)}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            vectors = self.inner.embed(missing)
            found.update(zip(missing, vectors, strict=True))
            if len(texts) == 1:  # one write's own vector: no other process will ask for it,
                return [found[t] for t in texts]  # and its write is waiting for it now
            try:
                with self._redis.pipeline(transaction=False) as pipe:
                    for text, vector in zip(missing, vectors, strict=True):
                        pipe.set(self._key(text), np.asarray(vector, np.float32).tobytes(),
                                 ex=self._ttl_s)
                    pipe.execute()
            except Exception:
                pass
        return [found[t] for t in texts]


def computes_in_process(embedder: Embedder) -> bool:
    """The vectors come from the local model under whatever caches wrap it: their time is
    bounded by the texts, never a wait on a network endpoint."""
    while not isinstance(embedder, LocalEmbedder):
        inner = getattr(embedder, "inner", None)
        if inner is None:
            return False
        embedder = inner
    return True


class EmbedderUnavailable(RuntimeError):
    """The configured embedder cannot run in this installation."""


def require_local_extra(settings: Settings) -> None:
    """Raises EmbedderUnavailable, one line naming the pip command, when the local runtime's
    extra or the model's files are not installed. Imports none of them."""
    missing = missing_install(settings.embedding_runtime, settings.embedding_model,
                              settings.embedding_model_dir)
    if missing is not None:
        raise EmbedderUnavailable(missing)


def _encoder(runtime: str, model_name: str, model_dir: str | Path | None,
             threads: int, precision: str) -> Encoder:
    try:
        return shared_encoder(runtime, model_name, model_dir, threads, precision)
    except ModelPackageMissing as exc:
        raise EmbedderUnavailable(str(exc)) from exc
    except ModelFilesError as exc:  # an unknown model, files missing from a directory
        raise EmbeddingError(str(exc)) from exc


def build_backend(settings: Settings) -> Embedder:
    """The configured model or endpoint itself, without caches."""
    if settings.embedding_backend == "openai":
        return OpenAIEmbedder(
            settings.embedding_model,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key,
            timeout_s=settings.embedding_timeout_s,
        )
    require_local_extra(settings)
    return LocalEmbedder.from_settings(settings)


def build_embedder(settings: Settings) -> Embedder:
    inner: Embedder = ReportingEmbedder(build_backend(settings))
    if settings.redis_url and settings.embedding_shared_cache_ttl_s > 0:
        inner = SharedVectorCache(inner, settings.redis_url, settings.embedding_shared_cache_ttl_s)
    if settings.embedding_cache_size > 0:
        return CachedEmbedder(inner, settings.embedding_cache_size)
    return inner


def preload_local_model(settings: Settings) -> bool:
    """Load the local model in a process that is about to fork its workers (True if loaded):
    its children share it (worker/local_embedding/). Runs no inference."""
    if settings.embedding_backend != "local":
        return False
    require_local_extra(settings)
    LocalEmbedder.from_settings(settings)
    return True


def warm_local_model(embedder: Embedder | None) -> None:
    """In a pool process before its first message: the local model under whatever caches
    wrap it, warmed (`LocalEmbedder.warm_up`). Nothing for an endpoint."""
    while embedder is not None and not isinstance(embedder, LocalEmbedder):
        embedder = getattr(embedder, "inner", None)
    if embedder is not None:
        embedder.warm_up()


_process_embedders: dict[tuple[int, str, str, str | None], Embedder] = {}
_process_lock = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """The embedder of this process for these settings (loaded once per worker process)."""
    key = (os.getpid(), settings.embedding_backend, settings.embedding_model,
           settings.embedding_base_url)
    with _process_lock:
        embedder = _process_embedders.get(key)
        if embedder is None:
            embedder = _process_embedders[key] = build_embedder(settings)
        return embedder
