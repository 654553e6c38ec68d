-- Idempotency records belong to a user: two users may send the same request_id, and deleting a
-- user deletes theirs. They expire (created_at, Unix seconds, is indexed for the sweep). Existing
-- records take the user_id their remembered answer echoes.
ALTER TABLE idempotency ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
UPDATE idempotency SET user_id = coalesce(response::jsonb ->> 'user_id', '')
  WHERE response LIKE '{%';
ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;
ALTER TABLE idempotency ADD PRIMARY KEY (user_id, key);
CREATE INDEX idempotency_created ON idempotency(created_at);
-- The retention sweep looks for users whose latest message is old.
CREATE INDEX memories_scope_created ON memories(kind, workspace, user_id, created_at);
