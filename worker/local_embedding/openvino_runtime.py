"""The default local runtime: the model's graph (graph.py) compiled by OpenVINO for this CPU.

Why OpenVINO before ONNX Runtime: on the same graph and one thread it is a little faster in
fp32 (4.9 against 5.2 ms for one short sentence here), and on a CPU with bfloat16
instructions (AVX512_BF16 or AMX) it runs the matrix products in bfloat16 with float32
accumulation, which halves the embedding (2.8 ms) for vectors at cosine ≥ 0.99995 to
torch's (docs/benchmarks.md, "Issue 24, part 5"; docs/decisions.md). Where the CPU has no
bfloat16 instructions, or with MEMORY_EMBEDDING_PRECISION=f32, it runs in fp32.

The graph is the ONNX ModelProto graph.py builds, read from its bytes (OpenVINO's ONNX
front end), so both runtimes run the same operations on the same weights; tokenization is
shared with onnx_runtime.py.

Threads and fork: with one inference thread (the default: a worker runs one process per
core) the compiled model built in a prefork worker's main process serves every child, its
weights shared copy-on-write; each process makes its own infer request on first use. With
more threads each process compiles its own: a thread pool does not survive fork.

Shapes: OpenVINO makes a shape's kernels the first time a process's request runs it (about
3 ms more for that call; they are not inherited through fork) and keeps them for the
request's life. `warm_up` runs the lengths most notes have (`WARM_LENGTHS`): a prefork
worker's pool process does so before it takes its first message (worker/celery_app.py).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worker.local_embedding.graph import ATTENTION_MASK, INPUT_IDS, OUTPUT, serialized_model
from worker.local_embedding.model_files import read_spec
from worker.local_embedding.onnx_runtime import encode_in_batches, load_tokenizer, tokenize

Precision = str  # "bf16" or "f32"

# Token counts (with [CLS] and [SEP]) of one note that `warm_up` runs: ~0.3 s.
WARM_LENGTHS = range(3, 49)

_encoders: weakref.WeakSet[OpenVinoEncoder] = weakref.WeakSet()


def _fresh_locks_in_child() -> None:
    """A fork may come while another thread of the parent (the embedding thread, a caller's)
    holds an encoder's lock; that thread is not in the child, so the child's lock is new."""
    for encoder in list(_encoders):
        encoder._lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_locks_in_child)


def bf16_capable(core: Any) -> bool:
    """Whether OpenVINO's CPU plugin has bfloat16 kernels for this CPU."""
    return "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoEncoder:
    """One model: tokenizer and compiled graph. `encode` is thread-safe."""

    def __init__(self, model_dir: Path, threads: int, precision: Precision = "bf16") -> None:
        import openvino

        self.model_dir = model_dir
        self.threads = max(1, threads)
        self.spec = read_spec(model_dir)
        self._tokenizer = load_tokenizer(model_dir, self.spec)
        self._core = openvino.Core()
        self.precision = "bf16" if precision == "bf16" and bf16_capable(self._core) else "f32"
        self._graph: Any = self._core.read_model(serialized_model(model_dir, self.spec))
        self._compiled: Any = None
        self._request: Any = None
        self._pid = 0
        self._lock = threading.Lock()
        _encoders.add(self)
        if self.threads == 1:
            self._compiled = self._compile()  # shared by the children of a fork
            self._graph = None  # the compiled model holds the weights now

    def _compile(self) -> Any:
        return self._core.compile_model(self._graph, "CPU", {
            "INFERENCE_NUM_THREADS": self.threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": self.precision,
        })

    def _request_for_this_process(self) -> Any:
        pid = os.getpid()
        if self._request is not None and self._pid == pid:
            return self._request
        if self.threads > 1:  # a compiled model's thread pool does not survive fork
            if self._graph is None:
                raise RuntimeError("the graph was released before this process needed it")
            self._compiled = self._compile()
        self._request = self._compiled.create_infer_request()
        self._pid = pid
        return self._request

    def warm_up(self) -> None:
        """Make this process's kernels for one note of each of `WARM_LENGTHS` tokens."""
        with self._lock:
            request = self._request_for_this_process()
            for length in WARM_LENGTHS:
                ids = np.full((1, length), self.spec.pad_token_id, dtype=np.int64)
                request.infer({INPUT_IDS: ids, ATTENTION_MASK: np.ones_like(ids)})

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return tokenize(self._tokenizer, self.spec, texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text."""
        with self._lock:
            request = self._request_for_this_process()

            def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
                result = request.infer({INPUT_IDS: ids, ATTENTION_MASK: mask})
                # A copy: the request's output buffer is reused by its next inference.
                return np.array(result[OUTPUT], dtype=np.float32)

            return encode_in_batches(texts, self.spec, self.tokenize, run)
