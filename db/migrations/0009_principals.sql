-- 0009: the users and companies this system holds memory for, by id. Write admission's
-- foreign-identity check blocks a note that names one of them other than the writing run's
-- own (their information does not belong in someone else's memory); an id nobody here holds
-- is nobody's, and a note naming it stays in the writer's own scope.
--
-- Ids are compared case-insensitively (lower()), as the check reads folded text.
CREATE TABLE principals (
    kind text NOT NULL CHECK (kind IN ('user', 'company')),
    folded_id text NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (folded_id, kind)
);

-- Every run and every recorded conversation registers its user and company, whoever wrote
-- the row (the write path, a conversation record, an import with SQL). Every note is written
-- by a run or extracted from a conversation, so notes need no trigger of their own.
CREATE FUNCTION memory_register_principals() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NOT NULL THEN
        INSERT INTO principals (kind, folded_id) VALUES ('user', lower(NEW.user_id))
        ON CONFLICT DO NOTHING;
    END IF;
    IF NEW.company_id IS NOT NULL THEN
        INSERT INTO principals (kind, folded_id) VALUES ('company', lower(NEW.company_id))
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_register_principals AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION memory_register_principals();
CREATE TRIGGER conversations_register_principals AFTER INSERT ON conversations
    FOR EACH ROW EXECUTE FUNCTION memory_register_principals();

INSERT INTO principals (kind, folded_id)
SELECT 'user', lower(user_id) FROM (
    SELECT user_id FROM runs UNION SELECT user_id FROM conversations
    UNION SELECT user_id FROM notes) ids
WHERE user_id IS NOT NULL
ON CONFLICT DO NOTHING;

INSERT INTO principals (kind, folded_id)
SELECT 'company', lower(company_id) FROM (
    SELECT company_id FROM runs UNION SELECT company_id FROM conversations
    UNION SELECT company_id FROM notes) ids
WHERE company_id IS NOT NULL
ON CONFLICT DO NOTHING;
