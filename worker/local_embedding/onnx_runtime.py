"""The default local runtime: the model's tokenizer and its graph on ONNX Runtime, no torch.

Tokenization is the model's own `tokenizer.json` through the `tokenizers` package, set as
sentence-transformers sets it: truncation to `max_seq_length` (256 for all-MiniLM-L6-v2,
from `sentence_bert_config.json`; the 128 in tokenizer.json is not what the model was used
with), padding to the longest input of the batch.

Threads and fork: a prefork worker loads the model once in its main process and forks its
pool. With one intra-op thread (the default: a worker runs one process per core) ONNX
Runtime starts no thread of its own, so the session built in the parent is used as is by
every child, its weights shared copy-on-write. With more threads the parent keeps only the
graph's bytes and each process builds its own session on first use: a thread pool does not
survive fork.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worker.local_embedding.graph import ATTENTION_MASK, INPUT_IDS, OUTPUT, serialized_model
from worker.local_embedding.model_files import BertSpec, read_spec

# Inputs per forward pass: bounds the attention tensors (batch x heads x 256 x 256 floats)
# when a Memory Manager cycle embeds a thousand notes at once.
BATCH = 64


def load_tokenizer(model_dir: Path, spec: BertSpec) -> Any:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no Rust pool before a fork
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=spec.max_seq_length)
    pad_token = tokenizer.id_to_token(spec.pad_token_id) or "[PAD]"
    tokenizer.enable_padding(pad_id=spec.pad_token_id, pad_token=pad_token)  # to the longest
    return tokenizer


def tokenize(tokenizer: Any, spec: BertSpec,
             texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """input_ids and attention_mask, int64 [batch, longest], as the graph takes them."""
    if spec.do_lower_case:
        texts = [text.lower() for text in texts]
    encodings = tokenizer.encode_batch(list(texts))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


def encode_in_batches(texts: Sequence[str], spec: BertSpec,
                      tokenize_batch: Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]],
                      run: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The rows `run` gives for `texts`, `BATCH` texts per forward pass, as float32."""
    if not texts:
        return np.zeros((0, spec.hidden_size), dtype=np.float32)
    rows = [run(*tokenize_batch(texts[start:start + BATCH]))
            for start in range(0, len(texts), BATCH)]
    return np.concatenate(rows).astype(np.float32, copy=False)


def import_onnxruntime() -> Any:
    """onnxruntime, its telemetry off: otherwise, from 1.2x on, importing it writes a device
    id under $XDG_CACHE_HOME (or ~/.cache)/Microsoft/DeveloperTools, and warns on stderr
    where it cannot. A worker writes only to its data folder and /tmp."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    return onnxruntime


def session_options(threads: int) -> Any:
    onnxruntime = import_onnxruntime()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no warnings on a worker's stderr
    # No arena: it would keep a large batch's peak (the attention scores of 64 x 256 tokens,
    # ~400 MB) for the life of the process; allocating per run costs nothing measurable.
    options.enable_cpu_mem_arena = False
    return options


class OnnxEncoder:
    """One model: tokenizer, graph and session. `encode` is thread-safe."""

    def __init__(self, model_dir: Path, threads: int) -> None:
        self.model_dir = model_dir
        self.threads = max(1, threads)
        self.spec = read_spec(model_dir)
        self._tokenizer = load_tokenizer(model_dir, self.spec)
        self._model: bytes | None = serialized_model(model_dir, self.spec)
        self._session: Any = None
        self._session_pid = 0
        self._lock = threading.Lock()
        if self.threads == 1:
            self._session_for_this_process()  # shared by the children of a fork
            self._model = None  # the session holds the weights now

    def _session_for_this_process(self) -> Any:
        pid = os.getpid()
        if self._session is not None and (self._session_pid == pid or self.threads == 1):
            return self._session
        onnxruntime = import_onnxruntime()

        if self._model is None:  # a forked child of a single-threaded session never gets here
            raise RuntimeError("the ONNX graph was released before this process needed it")
        self._session = onnxruntime.InferenceSession(
            self._model, sess_options=session_options(self.threads),
            providers=["CPUExecutionProvider"])
        self._session_pid = pid
        return self._session

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return tokenize(self._tokenizer, self.spec, texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text."""
        with self._lock:
            session = self._session_for_this_process()

            def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
                [vectors] = session.run([OUTPUT], {INPUT_IDS: ids, ATTENTION_MASK: mask})
                return np.asarray(vectors)

            return encode_in_batches(texts, self.spec, self.tokenize, run)
