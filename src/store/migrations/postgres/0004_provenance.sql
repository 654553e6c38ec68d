-- Provenance of agent memories: a JSON object naming the event and the messages a memory came
-- from (and, after an UPDATE, what it replaced); '' when unknown (memories written before it was
-- recorded). Each history row keeps the provenance of the state it wrote.
ALTER TABLE memories ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
ALTER TABLE memory_history ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
