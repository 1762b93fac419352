"""A small learned second opinion for admission by effect: notes that read like the hostile
ones, in words the rules do not know.

The rules (`effects.py`) say exactly what they catch, and a paraphrase they do not know passes.
This model generalizes over wording: a logistic regression on hashed character 3-5-grams and
word unigrams and bigrams of the folded note, trained on the labelled sets in tests/data
(`effect_training.py`). It ships as one weight file (`effect_model.npz`), runs on the CPU in
a few dozen microseconds, and is never the only reason to block: a note it flags is only
*held* (`effect-doubtful`), so a false flag loses nothing. Its threshold was chosen by
cross-validation so that about 0.5 % of benign notes written as instructions are held.

It is also the second signal a block needs: a rule's block stands only when the note scores
above `block_floor` (the 90th percentile of benign instructions under cross-validation);
a note the model finds ordinary is held instead. Benign notes phrased like attacks ("ignore
my earlier rule", "draft the notice in my name") are what a rule wrongly blocks, and the
model, trained on such traps, scores them low.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import pairwise

import numpy as np

BUCKETS = 1 << 18
NGRAMS = (3, 4, 5)
_PRIME = np.uint64(1_000_003)
_MODEL_FILE = "effect_model.npz"


def feature_ids(folded: str) -> np.ndarray:
    """The hashed features of a folded note: character n-grams (vectorized rolling hash) and
    words and word pairs. Deterministic across processes (no Python `hash`)."""
    padded = f" {folded} "
    codes = np.frombuffer(padded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    parts = []
    # The hash of an n+1-gram extends the n-gram's: h(c0..cn) = h(c0..cn-1) * P + cn.
    rolled = np.zeros(len(codes), dtype=np.uint64)
    for n in range(1, max(NGRAMS) + 1):
        if len(codes) < n:
            break
        rolled = rolled[:len(codes) - n + 1] * _PRIME + codes[n - 1:]
        if n in NGRAMS:
            parts.append((rolled * np.uint64(2 * n + 1)) % np.uint64(BUCKETS))
    words = folded.split()
    tokens = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in pairwise(words)]
    parts.append(np.array([zlib.crc32(t.encode()) % BUCKETS for t in tokens], dtype=np.uint64))
    return np.unique(np.concatenate(parts)).astype(np.int64)


@dataclass(frozen=True)
class EffectModel:
    weights: np.ndarray  # float32, BUCKETS
    bias: float
    threshold: float  # a note no rule matched scoring above it is held
    # A rule's block stands only if the note scores above this too; below, it is held.
    block_floor: float = float("-inf")

    def score(self, folded: str) -> float:
        ids = feature_ids(folded)
        if len(ids) == 0:
            return self.bias
        return float(self.weights[ids].sum() / np.sqrt(len(ids)) + self.bias)

    def flags(self, folded: str) -> bool:
        return self.score(folded) > self.threshold

    def confirms_block(self, folded: str) -> bool:
        return self.score(folded) > self.block_floor

    def save(self) -> bytes:
        out = io.BytesIO()
        np.savez_compressed(out, weights=self.weights.astype(np.float16),
                            bias=np.float64(self.bias), threshold=np.float64(self.threshold),
                            block_floor=np.float64(self.block_floor))
        return out.getvalue()


@lru_cache(maxsize=1)
def load_model() -> EffectModel | None:
    """The packaged model, or None when the package has none (the rules still apply)."""
    path = resources.files("worker.writes.admission") / _MODEL_FILE
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        data = np.load(io.BytesIO(handle.read()))
        return EffectModel(weights=data["weights"].astype(np.float32),
                           bias=float(data["bias"]), threshold=float(data["threshold"]),
                           block_floor=float(data["block_floor"]))
