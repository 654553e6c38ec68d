-- Knowledge-base documents uploaded by content (source_type CONTENT): the bytes the client sent,
-- kept from the upload until its ingestion ends (then deleted), so a restart can run the job
-- again. A rowid table: the bytes may be megabytes, which WITHOUT ROWID tables store poorly.
CREATE TABLE kb_uploads (
  workspace  TEXT NOT NULL,
  kb_id      TEXT NOT NULL,
  doc_id     TEXT NOT NULL,
  job_id     TEXT NOT NULL,  -- the upload the bytes belong to
  bytes      BLOB NOT NULL,
  PRIMARY KEY (workspace, kb_id, doc_id)
);
