-- Idempotency records belong to a user: two users may send the same request_id, and deleting a
-- user deletes theirs. They expire (created_at, Unix seconds, is indexed for the sweep). Existing
-- records take the user_id their remembered answer echoes.
CREATE TABLE idempotency_per_user (
  user_id     TEXT    NOT NULL,
  key         TEXT    NOT NULL,       -- family-qualified request id
  body_hash   TEXT    NOT NULL,
  response    TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,       -- Unix seconds
  PRIMARY KEY (user_id, key)
) WITHOUT ROWID;
INSERT INTO idempotency_per_user(user_id, key, body_hash, response, created_at)
  SELECT CASE WHEN json_valid(response)
              THEN coalesce(json_extract(response, '$.user_id'), '') ELSE '' END,
         key, body_hash, response, created_at
  FROM idempotency;
DROP TABLE idempotency;
ALTER TABLE idempotency_per_user RENAME TO idempotency;
CREATE INDEX idempotency_created ON idempotency(created_at);
-- The retention sweep looks for users whose latest message is old.
CREATE INDEX memories_scope_created ON memories(kind, workspace, user_id, created_at);
