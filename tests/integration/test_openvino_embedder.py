"""The default local runtime (OpenVINO, worker/local_embedding/openvino_runtime.py) gives
all-MiniLM-L6-v2's vectors: in fp32 as sentence-transformers on torch gives them, in bfloat16
(the default where the CPU has it) within the issue's bar of cosine 0.999 to them, measured
at 0.99995 at worst on the reference sample. The detector's scores on every correction data
file are the same on both (bench/corrections.py, docs/benchmarks.md)."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from tests.minilm_reference import REFERENCE
from worker.embeddings import CachedEmbedder, LocalEmbedder, warm_local_model
from worker.local_embedding.openvino_runtime import WARM_LENGTHS, OpenVinoEncoder, bf16_capable
from worker.settings import LOCAL_EMBEDDING_MODEL

COSINE_FLOOR = 0.999


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    loaded = np.load(REFERENCE)
    return [str(t) for t in loaded["texts"]], loaded["vectors"]


def _embedder(precision: str) -> LocalEmbedder:
    return LocalEmbedder(LOCAL_EMBEDDING_MODEL, runtime="openvino", threads=1,
                         precision=precision)


def _encoder(embedder: LocalEmbedder) -> OpenVinoEncoder:
    encoder = embedder._encoder
    assert isinstance(encoder, OpenVinoEncoder)
    return encoder


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_openvino_vectors_are_the_torch_vectors(reference, precision):
    texts, expected = reference
    embedder = _embedder(precision)
    batched = np.stack(embedder.embed(texts))
    one_by_one = np.stack([embedder.embed([text])[0] for text in texts])
    for got in (batched, one_by_one):
        cosines = np.sum(got * expected, axis=1)
        print(f"\n{_encoder(embedder).precision}: cosine to the torch reference "
              f"min {cosines.min():.8f}, mean {cosines.mean():.8f}")
        assert cosines.min() >= COSINE_FLOOR, texts[int(np.argmin(cosines))]
        if _encoder(embedder).precision == "f32":
            assert np.abs(got - expected).max() < 1e-4


def test_bf16_is_used_where_the_cpu_has_it_and_f32_when_asked():
    import openvino

    capable = bf16_capable(openvino.Core())
    assert _encoder(_embedder("bf16")).precision == ("bf16" if capable else "f32")
    f32 = _encoder(_embedder("f32"))
    assert f32.precision == "f32"
    assert f32._compiled.get_property("INFERENCE_PRECISION_HINT").to_string() == "f32"


def test_warm_up_prepares_this_processes_request_and_changes_no_vector(reference):
    texts, _ = reference
    embedder = _embedder("bf16")
    before = np.stack(embedder.embed(texts[:8]))
    encoder = _encoder(embedder)
    # Through the caches a worker wraps the model in, as a pool process does at its start.
    warm_local_model(CachedEmbedder(embedder, 16))
    assert encoder._pid == os.getpid() and encoder._request is not None
    assert len(WARM_LENGTHS) >= 40 and min(WARM_LENGTHS) <= 3
    after = np.stack(embedder.embed(texts[:8]))
    np.testing.assert_array_equal(before, after)


def test_warming_an_endpoint_or_nothing_does_nothing():
    class Endpoint:
        model_name = "remote"

    warm_local_model(None)
    warm_local_model(CachedEmbedder(Endpoint(), 4))  # type: ignore[arg-type]


def test_a_fork_while_another_thread_holds_the_model_leaves_the_child_a_free_model():
    # The warm-up or the embedding thread may hold the encoder's lock when a process forks;
    # that thread is not in the child, so the child gets a lock of its own.
    embedder = _embedder("bf16")
    encoder = _encoder(embedder)
    embedder.embed(["User likes tea."])
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with encoder._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            signal.alarm(20)  # a lock inherited held would hang here: die instead
            vectors = embedder.embed(["User prefers green tea in the morning."])
            os._exit(0 if len(vectors) == 1 and vectors[0].shape == (384,) else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        release.set()
        holder.join()
