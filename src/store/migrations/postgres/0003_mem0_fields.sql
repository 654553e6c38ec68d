-- mem0 compatibility: agent memories get a fourth scope id (app_id) and their category names (a
-- JSON array of strings); users' feedback on memories is kept. The shards load a workspace's
-- memories whole, so app_id needs no index of its own; the event list pages newest first.
ALTER TABLE memories ADD COLUMN app_id TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN categories TEXT NOT NULL DEFAULT '[]';
CREATE INDEX memory_events_by_time ON memory_events(workspace, created_at, id);

CREATE TABLE memory_feedback (
  id          TEXT   PRIMARY KEY,
  workspace   TEXT   NOT NULL,
  memory_id   TEXT   NOT NULL,
  feedback    TEXT   NOT NULL,              -- POSITIVE | NEGATIVE | VERY_NEGATIVE | ''
  reason      TEXT   NOT NULL DEFAULT '',
  created_at  BIGINT NOT NULL
);
CREATE INDEX memory_feedback_memory ON memory_feedback(workspace, memory_id, created_at);
