"""The default local runtime (ONNX Runtime, worker/local_embedding/) gives all-MiniLM-L6-v2's
vectors as sentence-transformers on torch gives them, without torch.

The reference is tests/data/minilm_reference_vectors.npz, made once with torch by
tests/minilm_reference.py: 302 texts from tests/data, seven over 256 tokens (truncated),
unicode, near-empty ones. Measured: cosine min 0.99999988, batched and one by one (max abs
difference per component 2e-7, the order of torch's own batch-versus-single noise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import PROJECT_ROOT
from tests.minilm_reference import REFERENCE, sample_texts
from worker.embeddings import EmbeddingError, LocalEmbedder
from worker.local_embedding.model_files import model_dir_for, read_spec
from worker.settings import LOCAL_EMBEDDING_MODEL

COSINE_FLOOR = 0.999


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    loaded = np.load(REFERENCE)
    return [str(t) for t in loaded["texts"]], loaded["vectors"]


@pytest.fixture(scope="module")
def packaged() -> Path:
    return model_dir_for(LOCAL_EMBEDDING_MODEL, None)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_reference_sample_is_the_one_the_script_draws(reference):
    texts, vectors = reference
    assert texts == sample_texts(), "regenerate with tests/minilm_reference.py"
    assert vectors.shape == (len(texts), 384) and vectors.dtype == np.float32
    assert len(texts) >= 300


def test_onnx_vectors_are_the_torch_vectors(reference):
    texts, expected = reference
    embedder = LocalEmbedder(LOCAL_EMBEDDING_MODEL, runtime="onnx", threads=1)
    batched = np.stack(embedder.embed(texts))
    one_by_one = np.stack([embedder.embed([text])[0] for text in texts])
    for got in (batched, one_by_one):
        cosines = _cosines(got, expected)
        worst = int(np.argmin(cosines))
        print(f"\ncosine to the torch reference: min {cosines.min():.8f} "
              f"({texts[worst][:60]!r}), mean {cosines.mean():.8f}")
        assert cosines.min() >= COSINE_FLOOR, (texts[worst], cosines.min())
        assert np.abs(got - expected).max() < 1e-4


def test_truncation_is_sentence_transformers_256_tokens(packaged, reference):
    spec = read_spec(packaged)
    assert spec.max_seq_length == 256  # sentence_bert_config.json; tokenizer.json says 128
    assert (spec.hidden_size, spec.num_layers, spec.num_heads) == (384, 6, 12)
    assert spec.layer_norm_eps == 1e-12
    texts, _ = reference
    long_texts = [t for t in texts if len(t.split()) > 300]
    assert long_texts
    from worker.local_embedding.onnx_runtime import OnnxEncoder

    encoder = OnnxEncoder(packaged, 1)
    ids, mask = encoder.tokenize(long_texts)
    assert ids.shape[1] == 256 and (mask.sum(axis=1) == 256).all()
    assert (ids[:, 0] == 101).all() and (ids[:, -1] == 102).all()  # [CLS] … [SEP]


def test_the_built_graph_passes_the_onnx_checker(packaged):
    import onnx

    from worker.local_embedding.graph import build_graph, load_weights

    model = build_graph(load_weights(packaged / "model.safetensors"), read_spec(packaged))
    onnx.checker.check_model(model)
    ops = {node.op_type for node in model.graph.node}
    assert {"LayerNormalization", "Erf", "Softmax", "ReduceL2"} <= ops
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]


def test_a_directory_of_the_same_files_gives_the_same_vectors(packaged, reference, tmp_path):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(packaged, snapshot)
    texts, expected = reference
    embedder = LocalEmbedder(LOCAL_EMBEDDING_MODEL, runtime="onnx", threads=1,
                             model_dir=snapshot)
    assert _cosines(np.stack(embedder.embed(texts[:20])), expected[:20]).min() >= COSINE_FLOOR

    (snapshot / "model.safetensors").unlink()
    with pytest.raises(EmbeddingError, match=r"does not hold the model's model\.safetensors"):
        LocalEmbedder(LOCAL_EMBEDDING_MODEL, runtime="onnx", threads=1, model_dir=snapshot)


_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from worker.embeddings import LocalEmbedder, preload_local_model
    from worker.settings import Settings

    threads = int(sys.argv[1])
    settings = Settings(_env_file=None)
    assert settings.embedding_threads == threads
    assert preload_local_model(settings)  # in the parent, before the fork, as a prefork worker
    texts = json.loads(sys.argv[2])
    children = []
    for _ in range(2):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            vectors = LocalEmbedder.from_settings(settings).embed(texts)
            os.write(writer, json.dumps([v.tolist() for v in vectors]).encode())
            os._exit(0)
        os.close(writer)
        with os.fdopen(reader) as pipe:
            children.append(json.loads(pipe.read()))
        assert os.waitpid(pid, 0)[1] == 0
    parent = [v.tolist() for v in LocalEmbedder.from_settings(settings).embed(texts)]
    print(json.dumps({"children": children, "parent": parent,
                      "torch": "torch" in sys.modules,
                      "sentence_transformers": "sentence_transformers" in sys.modules}))
""")


@pytest.mark.parametrize("runtime", ["openvino", "onnx"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_model_loaded_before_a_fork_embeds_in_the_children_without_torch(reference, runtime,
                                                                           threads, tmp_path):
    texts, expected = reference
    sample = texts[:6]
    env = {**os.environ, "MEMORY_EMBEDDING_THREADS": str(threads),
           "MEMORY_EMBEDDING_RUNTIME": runtime, "HOME": str(tmp_path / "home"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("ORT_DISABLE_TELEMETRY", None)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(threads), json.dumps(sample)],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["torch"] is False and found["sentence_transformers"] is False
    for vectors in [*found["children"], found["parent"]]:
        got = np.array(vectors, dtype=np.float32)
        assert _cosines(got, expected[:6]).min() >= COSINE_FLOOR
    # No telemetry (ONNX Runtime's is off; OpenVINO's is its converter's, never loaded) and
    # no kernel cache: nothing written under the home or cache folder.
    assert not (tmp_path / "home").exists() and not (tmp_path / "cache").exists()
    assert done.stderr == "", done.stderr
