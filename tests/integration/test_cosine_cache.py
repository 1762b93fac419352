"""The unit tier's cached MiniLM cosines are the model's: every cached pair recomputed live."""

from __future__ import annotations

import pytest

from tests import cosines


def test_every_cached_cosine_is_the_models():
    cached = cosines.load()
    assert len(cached) > 1000, "the cache covers the labeled sets the unit tier scores"
    live = cosines.minilm([text for pair in cached for text in pair])
    drifted = [(a, b, value, live(a, b)) for (a, b), value in cached.items()
               if live(a, b) != pytest.approx(value, abs=1e-5)]
    assert drifted == [], f"{len(drifted)} cached cosines differ from MiniLM's: {drifted[:3]}"
