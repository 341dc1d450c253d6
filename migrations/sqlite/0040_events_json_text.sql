-- SQLite already keeps each payload and metadata as the JSON text that was appended; this version
-- changes PostgreSQL's events table to match.
SELECT 1;
