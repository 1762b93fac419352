-- 0007: Recent and All order candidates from the lattice indexes as well (db/queries/
-- retrieval.py, _ordered_sql). Ranking by similarity already read only notes_vector_idx;
-- ordering by date had to read every visible note's row from the heap to learn its
-- created_at (~1,300 random rows per request at 1M notes with shared notes). created_at
-- joins the INCLUDE list; key, predicate and everything else are as in 0004.
DROP INDEX notes_vector_idx;
CREATE INDEX notes_vector_idx ON notes (agent_id, user_id, company_id, embedding_model)
    INCLUDE (status, expires_at, id, created_at, embedding)
    WHERE status IN ('Active', 'Provisional')
      AND (octet_length(coalesce(agent_id, '')) + octet_length(coalesce(user_id, '')) +
           octet_length(coalesce(company_id, '')) + octet_length(embedding_model) +
           4 * vector_dims(embedding)) <= 2400;
