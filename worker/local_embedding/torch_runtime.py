"""The previous local runtime, kept as an option: sentence-transformers on torch
(`MEMORY_EMBEDDING_RUNTIME=torch`, the `torch` extra). Same model files, same vectors
(tests/data/minilm_reference_vectors.npz was made with it).

Threads and fork: the parent that preloads the model runs no inference; with one intra-op
thread it never starts the OpenMP pool (libgomp's pool does not survive fork), and each child
sets its own thread count before its first forward pass.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class TorchEncoder:
    """One sentence-transformers model on CPU. `encode` is thread-safe."""

    def __init__(self, model_dir: Path, threads: int) -> None:
        _offline()
        import torch
        from sentence_transformers import SentenceTransformer

        self.model_dir = model_dir
        self.threads = max(1, threads)
        torch.set_num_threads(1)  # until a process embeds: see the module's docstring
        self._model: Any = SentenceTransformer(str(model_dir), device="cpu")
        self._threads_set_in = 0
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with self._lock:
            if self._threads_set_in != os.getpid():
                torch.set_num_threads(self.threads)
                self._threads_set_in = os.getpid()
            # The model called directly: `SentenceTransformer.encode` adds several ms of
            # bookkeeping per call, more than a short sentence's forward pass on one core.
            with torch.inference_mode():
                features = self._model.preprocess(list(texts))
                matrix = self._model(features)["sentence_embedding"].numpy()
        return np.asarray(matrix, dtype=np.float32)
