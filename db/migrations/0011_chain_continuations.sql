-- 0011: the rest of a chain of writes whose publication failed (the broker was unreachable
-- for longer than the publish retries). The write before it is committed; its successors
-- must not depend on one publish attempt. `memory.continuations.flush` (beat, every 15 s)
-- publishes them again; a write delivered twice is replayed, never applied twice.
CREATE TABLE chain_continuations (
    id bigserial PRIMARY KEY,
    parent_task_id text NOT NULL UNIQUE,
    root_id text,
    chain jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now()
);
