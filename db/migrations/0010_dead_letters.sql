-- 0010: messages moved aside instead of handled: nested deeper than any real payload,
-- undecodable, or delivered again and again because handling them kept killing the worker.
-- Each is answered where it can be (a write ends `rejected-invalid` in its run's order) and
-- kept here for an operator: `memory-worker dead-letters`.
CREATE TABLE dead_letters (
    id bigserial PRIMARY KEY,
    task_id text,
    task_name text,
    reason text NOT NULL,
    deliveries integer,
    body text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_created_idx ON dead_letters (created_at);
