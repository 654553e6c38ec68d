-- Knowledge-base documents uploaded by content (source_type CONTENT): the bytes the client sent,
-- kept from the upload until its ingestion ends (then deleted), so whichever node runs the job
-- (after a restart, or taking over a lease) reads them from here.
CREATE TABLE kb_uploads (
  workspace  TEXT  NOT NULL,
  kb_id      TEXT  NOT NULL,
  doc_id     TEXT  NOT NULL,
  job_id     TEXT  NOT NULL,
  bytes      BYTEA NOT NULL,
  PRIMARY KEY (workspace, kb_id, doc_id)
);
