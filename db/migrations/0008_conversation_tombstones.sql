-- 0008: a note's source conversation is a stale reference only once that conversation was
-- recorded and then deleted — never because the run's provenance names a conversation this
-- system never held (`conversation_id` on a run is optional provenance; most agent services
-- never record their conversations). Before this, stale-reference pruning archived every note
-- whose conversation was absent, which was nearly every in-flight note.

-- A deleted conversation leaves its id here, whoever deleted it (the product or an operator
-- with SQL). Stale-reference pruning looks here.
CREATE TABLE conversation_tombstones (
    conversation_id text PRIMARY KEY,
    deleted_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION memory_conversation_tombstone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO conversation_tombstones (conversation_id) VALUES (OLD.id)
    ON CONFLICT (conversation_id) DO UPDATE SET deleted_at = EXCLUDED.deleted_at;
    RETURN OLD;
END
$$;

CREATE TRIGGER conversations_tombstone AFTER DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION memory_conversation_tombstone();

-- Lineage of the repair below.
ALTER TABLE note_events DROP CONSTRAINT note_events_action_check;
ALTER TABLE note_events ADD CONSTRAINT note_events_action_check CHECK (action IN (
    'hardened', 'deduplicated', 'reinforced', 'revoked', 'flagged', 'consolidated', 'created',
    'archived', 'expired', 'decayed', 'scored', 'pruned', 'restored'));

-- Repair: give back the notes the old rule archived wrongly. A note qualifies when its last
-- lineage event is that pruning ("source conversation deleted", by stale_references) and
-- nothing proves its conversation was ever held: a conversation that exists now was never
-- deleted, and one that is gone was held only if something was extracted from it (a note
-- authored by the Memory Manager, or an example, names it). It returns to the status the
-- pruning took it from. A note whose exact restatement is injectable in its scope today stays
-- archived: restoring it would only add a duplicate.
WITH pruned AS (
    SELECT DISTINCT ON (e.note_id) e.note_id, e.action, e.actor, e.reason, e.from_status
    FROM note_events e
    WHERE e.note_id IN (SELECT note_id FROM note_events
                        WHERE action = 'pruned' AND actor = 'stale_references')
    ORDER BY e.note_id, e.id DESC
), extracted_from AS (
    SELECT source_conversation_id AS id FROM notes
    WHERE author_type = 'MemoryManager' AND source_conversation_id IS NOT NULL
    UNION
    SELECT source_conversation_id FROM examples WHERE source_conversation_id IS NOT NULL
), wrongly AS (
    SELECT n.id, p.from_status
    FROM pruned p JOIN notes n ON n.id = p.note_id
    WHERE p.action = 'pruned' AND p.actor = 'stale_references'
      AND p.reason = 'source conversation deleted'
      AND p.from_status IN ('Active', 'Provisional')
      AND n.status = 'Archived'
      AND n.source_conversation_id IS NOT NULL
      AND n.superseded_by IS NULL AND n.consolidated_into_note_id IS NULL
      AND (EXISTS (SELECT 1 FROM conversations c WHERE c.id = n.source_conversation_id)
           OR n.source_conversation_id NOT IN (SELECT id FROM extracted_from))
      AND NOT EXISTS (SELECT 1 FROM notes d
                      WHERE d.scope_key = n.scope_key AND d.content_hash = n.content_hash
                        AND d.status IN ('Active', 'Provisional') AND d.id <> n.id)
), restored AS (
    UPDATE notes n SET status = w.from_status, valid_to = NULL, updated_at = now()
    FROM wrongly w WHERE n.id = w.id
    RETURNING n.id, w.from_status
)
INSERT INTO note_events (note_id, action, from_status, to_status, actor, reason)
SELECT id, 'restored', 'Archived', from_status, 'migration 0008',
       'pruned as a stale reference although its source conversation was never recorded'
FROM restored;
