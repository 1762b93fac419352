"""Vectors read back from Postgres arrive as pgvector `Vector` objects; the domain works with
numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)
