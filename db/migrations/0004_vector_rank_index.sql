-- 0004: exact vector ranking without reading note rows (db/queries/retrieval.py,
-- relevant_notes). A request ranks every note of its lattice levels by similarity; at 1M
-- notes reading those rows from the heap (text, jsonb, 1.5 kB vector: one random page each)
-- was most of the read path's time. notes_vector_idx carries what ranking needs (status,
-- expiry, id, the vector), so ranking is an index-only scan of one range per lattice level.
--
-- A btree row is capped at 2,704 bytes, so only rows whose key texts plus 4 bytes per vector
-- dimension come to at most 2,400 are in it (a 384-dim MiniLM vector is 1,536); the lattice
-- index is narrowed to the other injectable rows (no embedding, a large model's vector, very
-- long ids). Each injectable row is in exactly one of the two, no insert can fail on row size,
-- and the ranking cannot be planned over the heap: with a general lattice index the planner
-- took it (the constant agent_id column makes it believe the rows are stored together).
-- The predicate texts are VECTOR_INDEXED_SQL / LATTICE_REST_SQL in db/queries/retrieval.py;
-- the queries repeat them so the planner can prove each index usable.
DROP INDEX notes_lattice_idx;
CREATE INDEX notes_vector_idx ON notes (agent_id, user_id, company_id, embedding_model)
    INCLUDE (status, expires_at, id, embedding)
    WHERE status IN ('Active', 'Provisional')
      AND (octet_length(coalesce(agent_id, '')) + octet_length(coalesce(user_id, '')) +
           octet_length(coalesce(company_id, '')) + octet_length(embedding_model) +
           4 * vector_dims(embedding)) <= 2400;
CREATE INDEX notes_lattice_rest_idx ON notes (agent_id, user_id, company_id, created_at DESC)
    WHERE status IN ('Active', 'Provisional')
      AND (embedding IS NULL
           OR (octet_length(coalesce(agent_id, '')) + octet_length(coalesce(user_id, '')) +
               octet_length(coalesce(company_id, '')) + octet_length(embedding_model) +
               4 * vector_dims(embedding)) > 2400);
