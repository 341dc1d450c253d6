-- The log keeps each payload and metadata as the JSON text that was appended (`json`), as SQLite
-- does, instead of PostgreSQL's parsed `jsonb`: no query looks inside them, every reader wants the
-- text, and `jsonb` cost a parse on each append and a conversion back to text on each read.
-- Rewrites the events table once (time in proportion to the log, under an exclusive lock).
ALTER TABLE events ALTER COLUMN payload TYPE json, ALTER COLUMN metadata TYPE json;
