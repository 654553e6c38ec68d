-- Engram schema v1: memories (leaderboard messages and, later, extracted memories), images stored once
-- by content hash, and idempotency records for request_id retries.
CREATE TABLE memories (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,  -- store-wide write order
  id            TEXT    NOT NULL UNIQUE,            -- m-<uuid>
  workspace     TEXT    NOT NULL,
  user_id       TEXT    NOT NULL DEFAULT '',
  agent_id      TEXT    NOT NULL DEFAULT '',
  run_id        TEXT    NOT NULL DEFAULT '',
  session_id    TEXT    NOT NULL DEFAULT '',
  role          TEXT    NOT NULL DEFAULT '',
  text          TEXT    NOT NULL,                   -- indexed text (text parts joined)
  parts         TEXT,                               -- ContentPart JSON with image references; NULL = text only
  metadata      TEXT    NOT NULL DEFAULT '{}',
  source_ts     INTEGER,                            -- message time, microseconds since epoch
  position      INTEGER NOT NULL DEFAULT 0,         -- index within its add request
  created_at    INTEGER NOT NULL,                   -- microseconds since epoch
  updated_at    INTEGER NOT NULL
);
CREATE INDEX memories_scope ON memories(workspace, user_id, seq);

CREATE TABLE images (
  sha256  TEXT PRIMARY KEY,
  mime    TEXT NOT NULL,
  bytes   BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE idempotency (
  key         TEXT PRIMARY KEY,       -- family-qualified request id
  body_hash   TEXT NOT NULL,
  response    TEXT NOT NULL,
  created_at  INTEGER NOT NULL
) WITHOUT ROWID;
