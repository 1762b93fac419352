"""The write side: a memory write from its wire payload to its committed effect.

`payloads` (parsing, never raising) → `apply` (sequencing and exactly-once, in Postgres) →
`pipeline` (the ordered guards of SPEC 4, each one small named step) over an `attempt`;
`admission/` (write admission and trust, SPEC 5: policy, screening, hooks, its guards) and
`candidates` (internal memory held for review) plug into the pipeline.
"""
