-- Embedding vectors, one per memory, with the model that made them: a model change is detected by
-- comparing `model` and the memory re-embedded in the background.
CREATE TABLE memory_vectors (
  memory_seq  INTEGER PRIMARY KEY REFERENCES memories(seq) ON DELETE CASCADE,
  model       TEXT    NOT NULL,
  dim         INTEGER NOT NULL,
  vector      BLOB    NOT NULL   -- float32 little-endian, L2-normalised
);
