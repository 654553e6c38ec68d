-- Agentic Memory V4: extracted memories share the memories table with leaderboard messages, told
-- apart by `kind`, so vectors, images and the write path are common. Events are the durable queue of
-- asynchronous adds; history records every change of a memory.
ALTER TABLE memories ADD COLUMN kind TEXT NOT NULL DEFAULT 'message';  -- 'message' | 'memory'
ALTER TABLE memories ADD COLUMN expires_at INTEGER;                     -- microseconds; NULL = never
CREATE INDEX memories_kind_workspace ON memories(kind, workspace, seq);

CREATE TABLE memory_events (
  id             TEXT    PRIMARY KEY,          -- me-<uuid>
  workspace      TEXT    NOT NULL,
  status         TEXT    NOT NULL,             -- PENDING | RUNNING | SUCCEEDED | FAILED
  request        TEXT    NOT NULL,             -- the validated add request (JSON)
  result         TEXT    NOT NULL DEFAULT '',  -- {"results": [...], "events": [...]} once finished
  error_message  TEXT    NOT NULL DEFAULT '',
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX memory_events_unfinished ON memory_events(status, created_at)
  WHERE status IN ('PENDING', 'RUNNING');

CREATE TABLE memory_history (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_id  TEXT    NOT NULL,
  workspace  TEXT    NOT NULL,
  event      TEXT    NOT NULL,               -- ADD | UPDATE | DELETE
  old_text   TEXT,
  new_text   TEXT,
  old_metadata TEXT,
  new_metadata TEXT,
  event_id   TEXT    NOT NULL DEFAULT '',    -- the memory event that made the change; '' for API calls
  at         INTEGER NOT NULL                -- microseconds since epoch
);
CREATE INDEX memory_history_memory ON memory_history(workspace, memory_id, seq);
