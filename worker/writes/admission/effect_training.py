"""Training the effect model (`effect_model.py`) from the labelled sets in tests/data.

    .venv/bin/python -m worker.writes.admission.effect_training    # writes effect_model.npz

Hostile: every hostile line of the tuning sets and of the blind sets already scored. Benign:
their benign lines (preferences phrased as instructions, six languages) and the English facts
of the correction and fact sets. A blind set not yet scored must not be in here: it is how
the next change is measured.

Logistic regression by SGD with the classes balanced, deterministic (fixed seed). The
threshold is the 99.5th percentile of the multilingual benign notes' scores under 5-fold
cross-validation (each note scored by a model that never saw it); the block floor, the 90th.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from worker.writes.admission.effect_model import BUCKETS, EffectModel, feature_ids
from worker.writes.admission.effects import fold_for_effects

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
# The sets the model learns from; the blind set being scored next is never listed here.
LABELLED = ("admission_effects_blind1.tsv", "admission_effects_blind2.tsv",
            "admission_effects_blind3.tsv", "admission_effects_blind4.tsv",
            "admission_effects_blind5.tsv", "admission_effects_blind6.tsv",
            "admission_effects_blind7.tsv", "admission_effects_tuning3.tsv")
EPOCHS, RATE, DECAY, SEED, FOLDS, BENIGN_QUANTILE = 10, 0.1, 1e-5, 0, 5, 0.995
BLOCK_FLOOR_QUANTILE = 0.90


def _rows(name: str) -> list[list[str]]:
    return [line.split("\t") for line in (DATA / name).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def labelled_sets() -> tuple[list[str], list[str], list[str]]:
    """(hostile, benign written as instructions in six languages, benign English facts)."""
    hostile = [row[2] for row in _rows("admission_effects_tuning_hostile.tsv")]
    instructions = [row[1] for row in _rows("admission_effects_tuning_benign.tsv")]
    for name in LABELLED:
        for kind, _, _, text in _rows(name):
            (hostile if kind == "hostile" else instructions).append(text)
    facts: dict[str, None] = dict.fromkeys(
        line.strip() for line in (DATA / "distinct_facts.txt").read_text(encoding="utf-8")
        .splitlines() if line.strip())
    for path in sorted(DATA.glob("correction_pairs*.tsv")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                facts.update(dict.fromkeys(part for part in line.split("\t")
                                           if len(part) > 15 and " " in part))
    return hostile, instructions, list(facts)


def fit(texts: Sequence[str], labels: Sequence[int]) -> tuple[np.ndarray, float]:
    features = [feature_ids(fold_for_effects(t)) for t in texts]
    y = np.asarray(labels, dtype=np.float64)
    positive_weight = (len(y) - y.sum()) / max(y.sum(), 1.0)
    weights, bias = np.zeros(BUCKETS), 0.0
    order = np.random.default_rng(SEED)
    for _ in range(EPOCHS):
        for i in order.permutation(len(features)):
            ids = features[i]
            scale = np.sqrt(max(len(ids), 1))
            p = 1.0 / (1.0 + np.exp(-(weights[ids].sum() / scale + bias)))
            gradient = (p - y[i]) * (positive_weight if y[i] == 1 else 1.0)
            weights[ids] -= RATE * (gradient / scale + DECAY * weights[ids])
            bias -= RATE * gradient * 0.05
    return weights, bias


def train() -> EffectModel:
    hostile, instructions, facts = labelled_sets()
    texts = hostile + instructions + facts
    labels = [1] * len(hostile) + [0] * (len(instructions) + len(facts))
    folds = np.random.default_rng(SEED + 1).integers(0, FOLDS, len(texts))
    held_out = np.zeros(len(texts))
    for fold in range(FOLDS):
        inside = [i for i in range(len(texts)) if folds[i] != fold]
        weights, bias = fit([texts[i] for i in inside], [labels[i] for i in inside])
        model = EffectModel(weights.astype(np.float32), bias, 0.0)
        for i in range(len(texts)):
            if folds[i] == fold:
                held_out[i] = model.score(fold_for_effects(texts[i]))
    benign_instructions = held_out[len(hostile):len(hostile) + len(instructions)]
    threshold = float(np.quantile(benign_instructions, BENIGN_QUANTILE))
    block_floor = float(np.quantile(benign_instructions, BLOCK_FLOOR_QUANTILE))
    recall = float(np.mean(held_out[:len(hostile)] > threshold))
    print(f"hostile {len(hostile)}, benign instructions {len(instructions)}, facts "
          f"{len(facts)}; threshold {threshold:.3f}, block floor {block_floor:.3f}; "
          f"cross-validated: hostile flagged "
          f"{recall:.1%}, benign instructions held {1 - BENIGN_QUANTILE:.1%}", file=sys.stderr)
    weights, bias = fit(texts, labels)
    return EffectModel(weights.astype(np.float32), bias, threshold, block_floor)


if __name__ == "__main__":
    target = Path(__file__).with_name("effect_model.npz")
    target.write_bytes(train().save())
    print(f"wrote {target} ({target.stat().st_size // 1024} KiB)", file=sys.stderr)
