"""The read side: the memory context an agent receives at run start.

`context` (orchestration, the access recorder) → `retrieval` (strategies, slots, the scoped
query) → `rerankers` → `rendering` (the byte-stable block; `spotlight` quotes a note that
reads as an instruction); `explain` answers an operator's "why does (or doesn't) it remember
X". The injection rules of SPEC 5 live with admission (worker/writes/admission/injection.py)
and are applied here.
"""
