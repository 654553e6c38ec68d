-- Skills (API V3): reusable procedures with their files, former versions, and the durable queue of
-- asynchronous extractions (skills/add).
CREATE TABLE skills (
  id            TEXT    PRIMARY KEY,            -- s-<uuid>
  workspace     TEXT    NOT NULL,
  owner         TEXT    NOT NULL,               -- user_id
  agent_id      TEXT    NOT NULL DEFAULT '',
  name          TEXT    NOT NULL,
  description   TEXT    NOT NULL,
  version       TEXT    NOT NULL,
  tags          TEXT    NOT NULL DEFAULT '[]',  -- JSON array of strings
  triggers      TEXT    NOT NULL DEFAULT '[]',  -- JSON array of strings
  license       TEXT    NOT NULL DEFAULT '',
  metadata      TEXT    NOT NULL DEFAULT '{}',  -- JSON object
  files         TEXT    NOT NULL,               -- JSON object path -> content
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  vector        BLOB,                           -- float32 little-endian; NULL = none
  vector_model  TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;
-- One skill per name and owner: a second one with the same name becomes a new version.
CREATE UNIQUE INDEX skills_owner_name ON skills(workspace, owner, name);

CREATE TABLE skill_versions (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  skill_id     TEXT    NOT NULL,
  workspace    TEXT    NOT NULL,
  version      TEXT    NOT NULL,
  snapshot     TEXT    NOT NULL,                -- the replaced state (JSON)
  replaced_at  INTEGER NOT NULL
);
CREATE INDEX skill_versions_skill ON skill_versions(workspace, skill_id, seq);

CREATE TABLE skill_tasks (
  id             TEXT    PRIMARY KEY,           -- st-<uuid>
  workspace      TEXT    NOT NULL,
  status         TEXT    NOT NULL,              -- pending | running | completed | failed
  request        TEXT    NOT NULL,              -- the validated add request (JSON)
  skill_ids      TEXT    NOT NULL DEFAULT '[]', -- JSON array, once completed
  error_message  TEXT    NOT NULL DEFAULT '',
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX skill_tasks_unfinished ON skill_tasks(status, created_at)
  WHERE status IN ('pending', 'running');
