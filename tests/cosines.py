"""MiniLM cosines of the labeled note pairs, cached so the unit tier needs neither torch nor a
model: `tests/data/minilm_cosines.tsv` (earlier, later, cosine), written by the unit tests
themselves when `RECORD_COSINES=1` and checked against the live model by
`tests/integration/test_cosine_cache.py`, so the cache can neither go stale nor be invented.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tests.helpers import DATA

CACHE = DATA / "minilm_cosines.tsv"
RECORD_ENV = "RECORD_COSINES"

Cosine = Callable[[str, str], float]


_HEADER = "earlier\tlater\tcosine"
# Every pair the session's recording runs used (a module fixture may be set up more than once).
_recorded: dict[tuple[str, str], float] = {}


def load() -> dict[tuple[str, str], float]:
    if not CACHE.exists():
        return {}
    lines = CACHE.read_text(encoding="utf-8").splitlines()
    assert lines[0] == _HEADER, f"{CACHE}: unexpected header"
    return {(earlier, later): float(value)
            for earlier, later, value in (line.split("\t") for line in lines[1:])}


def record(live: Cosine) -> Cosine:
    """`live`, remembering each pair for `write_recorded`."""
    def cos(a: str, b: str) -> float:
        _recorded[(a, b)] = live(a, b)
        return _recorded[(a, b)]

    return cos


def write_recorded() -> None:
    """Replace the cache with exactly the pairs the recording runs used (none goes stale)."""
    lines = [_HEADER]
    for (earlier, later), value in sorted(_recorded.items()):
        assert not {"\t", "\n"} & set(earlier + later), "a note with a tab or a line break"
        lines.append(f"{earlier}\t{later}\t{value!r}")
    CACHE.write_text("\n".join(lines) + "\n", encoding="utf-8")


def minilm(texts: Iterable[str] = ()) -> Cosine:
    """Cosines from the real default embedder (all-MiniLM-L6-v2, offline) in fp32; `texts`
    are embedded up front in batches. fp32, not the bfloat16 a worker uses where the CPU has
    it: the cache then holds the same figures on every machine (bfloat16's differ by up to
    5e-4, and bench/corrections.py shows the detector scoring the same on both)."""
    import numpy as np

    from worker.embeddings import LocalEmbedder

    embedder = LocalEmbedder(threads=1, precision="f32")
    cache: dict[str, np.ndarray] = {}

    def vectors(batch_of: Iterable[str]) -> None:
        missing = sorted({t for t in batch_of if t not in cache})
        for start in range(0, len(missing), 64):
            batch = missing[start:start + 64]
            cache.update(zip(batch, embedder.embed(batch), strict=True))

    def cos(a: str, b: str) -> float:
        vectors([a, b])
        return float(np.dot(cache[a], cache[b]))  # vectors are L2-normalized

    vectors(texts)
    return cos
