-- Engram schema for PostgreSQL (several nodes on one database). The same concepts as the SQLite
-- schema (migrations/sqlite), in one file, plus what several nodes need:
--   * scope_versions: a change counter per scope (see ScopeKey*() in store/types.h). Every write
--     transaction first bumps the counters of the scopes it touches; the row lock this takes
--     serialises the writers of one scope, so a reader that sees version V sees every row written
--     at versions <= V. Rows carry the version that last wrote them; deleted agent memories leave a
--     tombstone. A node brings its cached shard up to date with "version > what I have".
--   * lease_owner / lease_until on every job table (events, skill tasks, document ingestion): a job
--     belongs to the node that accepted or claimed it while its lease runs; a node renews the
--     leases of its jobs, and any node may claim a job whose lease ran out (FOR UPDATE SKIP LOCKED).
-- Times are microseconds since the Unix epoch (BIGINT), as in SQLite.
CREATE TABLE scope_versions (
  scope    TEXT   PRIMARY KEY,
  version  BIGINT NOT NULL
);

CREATE TABLE memories (
  seq           BIGSERIAL PRIMARY KEY,             -- store-wide write order
  id            TEXT    NOT NULL UNIQUE,           -- m-<uuid>
  kind          TEXT    NOT NULL DEFAULT 'message', -- 'message' (leaderboard) | 'memory' (V4)
  workspace     TEXT    NOT NULL,
  user_id       TEXT    NOT NULL DEFAULT '',
  agent_id      TEXT    NOT NULL DEFAULT '',
  run_id        TEXT    NOT NULL DEFAULT '',
  session_id    TEXT    NOT NULL DEFAULT '',
  role          TEXT    NOT NULL DEFAULT '',
  text          TEXT    NOT NULL,
  parts         TEXT,                              -- ContentPart JSON; NULL = text only
  metadata      TEXT    NOT NULL DEFAULT '{}',
  source_ts     BIGINT,
  position      INTEGER NOT NULL DEFAULT 0,
  created_at    BIGINT  NOT NULL,
  updated_at    BIGINT  NOT NULL,
  expires_at    BIGINT,
  version       BIGINT  NOT NULL DEFAULT 0,        -- scope version of the last write of this row
  vector_model  TEXT    NOT NULL DEFAULT '',       -- '' = no vector
  vector        BYTEA                              -- float32 little-endian, L2-normalised
);
CREATE INDEX memories_scope ON memories(kind, workspace, user_id, seq);
CREATE INDEX memories_scope_version ON memories(kind, workspace, user_id, version);
CREATE INDEX memories_workspace_version ON memories(kind, workspace, version);

CREATE TABLE memory_tombstones (
  workspace  TEXT   NOT NULL,
  id         TEXT   NOT NULL,
  version    BIGINT NOT NULL,
  PRIMARY KEY (workspace, version, id)
);

CREATE TABLE images (
  sha256  TEXT PRIMARY KEY,
  mime    TEXT  NOT NULL,
  bytes   BYTEA NOT NULL
);

CREATE TABLE idempotency (
  key         TEXT PRIMARY KEY,
  body_hash   TEXT   NOT NULL,
  response    TEXT   NOT NULL,
  created_at  BIGINT NOT NULL
);

CREATE TABLE memory_events (
  id             TEXT   PRIMARY KEY,
  workspace      TEXT   NOT NULL,
  status         TEXT   NOT NULL,             -- PENDING | RUNNING | SUCCEEDED | FAILED
  request        TEXT   NOT NULL,
  result         TEXT   NOT NULL DEFAULT '',
  error_message  TEXT   NOT NULL DEFAULT '',
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL,
  lease_owner    TEXT   NOT NULL DEFAULT '',
  lease_until    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX memory_events_unfinished ON memory_events(lease_until, created_at)
  WHERE status IN ('PENDING', 'RUNNING');

CREATE TABLE memory_history (
  seq          BIGSERIAL PRIMARY KEY,
  memory_id    TEXT   NOT NULL,
  workspace    TEXT   NOT NULL,
  event        TEXT   NOT NULL,
  old_text     TEXT,
  new_text     TEXT,
  old_metadata TEXT,
  new_metadata TEXT,
  event_id     TEXT   NOT NULL DEFAULT '',
  at           BIGINT NOT NULL
);
CREATE INDEX memory_history_memory ON memory_history(workspace, memory_id, seq);

CREATE TABLE skills (
  id            TEXT   PRIMARY KEY,
  workspace     TEXT   NOT NULL,
  owner         TEXT   NOT NULL,
  agent_id      TEXT   NOT NULL DEFAULT '',
  name          TEXT   NOT NULL,
  description   TEXT   NOT NULL,
  version       TEXT   NOT NULL,
  tags          TEXT   NOT NULL DEFAULT '[]',
  triggers      TEXT   NOT NULL DEFAULT '[]',
  license       TEXT   NOT NULL DEFAULT '',
  metadata      TEXT   NOT NULL DEFAULT '{}',
  files         TEXT   NOT NULL,
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL,
  vector        BYTEA,
  vector_model  TEXT   NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX skills_owner_name ON skills(workspace, owner, name);

CREATE TABLE skill_versions (
  seq          BIGSERIAL PRIMARY KEY,
  skill_id     TEXT   NOT NULL,
  workspace    TEXT   NOT NULL,
  version      TEXT   NOT NULL,
  snapshot     TEXT   NOT NULL,
  replaced_at  BIGINT NOT NULL
);
CREATE INDEX skill_versions_skill ON skill_versions(workspace, skill_id, seq);

CREATE TABLE skill_tasks (
  id             TEXT   PRIMARY KEY,
  workspace      TEXT   NOT NULL,
  status         TEXT   NOT NULL,             -- pending | running | completed | failed
  request        TEXT   NOT NULL,
  skill_ids      TEXT   NOT NULL DEFAULT '[]',
  error_message  TEXT   NOT NULL DEFAULT '',
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL,
  lease_owner    TEXT   NOT NULL DEFAULT '',
  lease_until    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX skill_tasks_unfinished ON skill_tasks(lease_until, created_at)
  WHERE status IN ('pending', 'running');

CREATE TABLE kb_docs (
  workspace      TEXT   NOT NULL,
  kb_id          TEXT   NOT NULL,
  id             TEXT   NOT NULL,
  job_id         TEXT   NOT NULL,
  title          TEXT   NOT NULL,
  source_type    TEXT   NOT NULL,
  file_url       TEXT   NOT NULL,
  status         TEXT   NOT NULL,             -- PROCESSING | SUCCESS | FAIL
  content        TEXT   NOT NULL DEFAULT '',
  error_message  TEXT   NOT NULL DEFAULT '',
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL,
  lease_owner    TEXT   NOT NULL DEFAULT '',
  lease_until    BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace, kb_id, id)
);
CREATE INDEX kb_docs_by_time ON kb_docs(workspace, kb_id, created_at);
CREATE INDEX kb_docs_processing ON kb_docs(lease_until, created_at) WHERE status = 'PROCESSING';

CREATE TABLE kb_chunks (
  workspace     TEXT    NOT NULL,
  kb_id         TEXT    NOT NULL,
  doc_id        TEXT    NOT NULL,
  position      INTEGER NOT NULL,
  heading       TEXT    NOT NULL DEFAULT '',
  text          TEXT    NOT NULL,
  vector_model  TEXT    NOT NULL DEFAULT '',
  vector        BYTEA,
  PRIMARY KEY (workspace, kb_id, doc_id, position)
);
