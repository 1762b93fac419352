-- 0002: read path. One btree range per lattice level: equality (or IS NULL) on agent, user and
-- company, newest first within it, over injectable rows only.
CREATE INDEX notes_lattice_idx ON notes (agent_id, user_id, company_id, created_at DESC)
    WHERE status IN ('Active', 'Provisional');
CREATE INDEX examples_lattice_idx ON examples (agent_id, user_id, company_id, created_at DESC)
    WHERE status IN ('Active', 'Provisional');
