-- The chains read model was a copy of columns every event row of the log already has, kept in
-- a table of its own with two more indexes: a row and three index entries written per event,
-- and a million rows to write again in a rebuild of a 1M log, for queries that read the log
-- itself (`chain` and every `origin` read `events` by `events_by_root_source`). Chains are read
-- from the log; the table, its checkpoint and any index a bulk rebuild left to restore go.
DELETE FROM projection_dropped_indexes WHERE table_name = 'chains';
DELETE FROM projection_checkpoints WHERE name = 'chains';
DROP TABLE chains;
