"""Every SQL statement the domain runs, by name. Nothing outside `db/` writes SQL.

Statements take bound parameters only (never interpolated values); the literal fragments
spliced in (`INJECTABLE_SQL`, the scope predicate of `db.scope`) are our own constants.
Vectors are bound as numpy arrays and travel in pgvector's binary format. One import style:
`from db.queries.<module> import <name>`; this package re-exports nothing.

Split by the path that runs the statements (a path owns its statements even where it touches
several tables), with the pieces every path shares beside them:

- write path: `runs` (run lock, sequencing, the write log, trace events) · `notes` (scope
  lock and neighbourhood, insert, reinforce, supersede-own) · `admission` (duplicate writes,
  known principals) · `candidates` (internal memory held for promotion)
- read path: `retrieval` (ranked, recent and all-notes strategies; examples) · `injection`
  (corrections and expiry facts that keep a note out) · `access` (access counts, folded
  later)
- Memory Manager: `manager` (cycle lock and rows, watermarks, note history) · `hardening`
  · `consolidation` · `maintenance` (importance, decay, expiry, pruning pages) ·
  `missing_vectors` (notes and examples stored without a vector, embedded later) ·
  `retention` (deleting old rows, erasing retired notes' content) · `conversations`
  (ingestion, extraction's reads, examples)
- forgetting on request: `erasure` (a subject's rows by table) · `fences` (what keeps an
  erased subject's late writes out) · `audit` (the records of erasures and exports) ·
  `export` (a subject's rows as JSON Lines) · `reapply` (after a restore) · `forget` (a run
  forgets one fact of its user; what extraction must not learn again)
- operations: `inspect` (notes for the CLI) · `stats` · `dead_letters` · `continuations`
- shared: `agents` (configuration rows) · `lattice` (scope columns, visible rows) ·
  `vectors` (numpy <-> pgvector)
"""
