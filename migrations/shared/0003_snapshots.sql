-- Aggregate snapshots kept by the command handler so long streams are not re-read on every
-- command. Not truth: any row may be deleted; the handler then folds the stream from the start.
CREATE TABLE snapshots (
    stream_id TEXT   PRIMARY KEY,
    kind      TEXT   NOT NULL,
    version   BIGINT NOT NULL,
    state     TEXT   NOT NULL,
    taken_at  BIGINT NOT NULL
);
