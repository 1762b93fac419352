"""Words of agent and business notes that the correction decision (`worker.corrections`) reads
by name. The tools, vendors and product names of such notes are data like the rest of the
vocabulary (`data/value_classes.tsv`, `data/phrases.tsv`).
"""

from __future__ import annotations

from worker.corrections import vocabulary

# Deployment environments name the thing a fact is about, not a value of it: "Staging runs
# Postgres 16" and "Production runs Postgres 14" both hold. The decision reads a changed
# environment beside another changed value as another subject. Space-separated.
ENVIRONMENTS = " ".join(vocabulary.WORD_SETS["environment"])
