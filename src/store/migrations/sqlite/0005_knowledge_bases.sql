-- Knowledge bases: uploaded documents and the chunks they are split into. A document row is also
-- the durable job of its ingestion: PROCESSING rows are resumed at start-up. `job_id` changes on
-- every upload, so a job that finishes after its document was deleted or uploaded again writes
-- nothing.
CREATE TABLE kb_docs (
  workspace      TEXT    NOT NULL,
  kb_id          TEXT    NOT NULL,
  id             TEXT    NOT NULL,             -- the caller's doc.id, or d-<uuid>
  job_id         TEXT    NOT NULL,
  title          TEXT    NOT NULL,
  source_type    TEXT    NOT NULL,             -- LOCAL | OSS
  file_url       TEXT    NOT NULL,
  status         TEXT    NOT NULL,             -- PROCESSING | SUCCESS | FAIL
  content        TEXT    NOT NULL DEFAULT '',  -- extracted text once SUCCESS
  error_message  TEXT    NOT NULL DEFAULT '',
  created_at     INTEGER NOT NULL,             -- microseconds since epoch (upload time)
  updated_at     INTEGER NOT NULL,
  PRIMARY KEY (workspace, kb_id, id)
) WITHOUT ROWID;
CREATE INDEX kb_docs_by_time ON kb_docs(workspace, kb_id, created_at);
CREATE INDEX kb_docs_processing ON kb_docs(status) WHERE status = 'PROCESSING';

CREATE TABLE kb_chunks (
  workspace     TEXT    NOT NULL,
  kb_id         TEXT    NOT NULL,
  doc_id        TEXT    NOT NULL,
  position      INTEGER NOT NULL,             -- 0-based order within the document
  heading       TEXT    NOT NULL DEFAULT '',  -- the section the chunk belongs to
  text          TEXT    NOT NULL,
  vector_model  TEXT    NOT NULL DEFAULT '',
  vector        BLOB,                         -- float32 little-endian; NULL without an embedder
  PRIMARY KEY (workspace, kb_id, doc_id, position)
) WITHOUT ROWID;
