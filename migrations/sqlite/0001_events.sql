-- The append-only event log (SQLite). Positions are assigned by the single writer inside its
-- write transaction, so commit order equals position order.
CREATE TABLE events (
    position       INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id       TEXT    NOT NULL UNIQUE,
    stream_id      TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    event_type     TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    payload        TEXT    NOT NULL,
    metadata       TEXT    NOT NULL,
    root_source_id TEXT    NOT NULL,
    parent_node_id TEXT,
    user_id        TEXT    NOT NULL,
    recorded_at    INTEGER NOT NULL, -- microseconds since the Unix epoch, UTC
    UNIQUE (stream_id, stream_version)
);

CREATE INDEX events_by_type ON events (event_type, position);
CREATE INDEX events_by_root_source ON events (root_source_id, position);
CREATE INDEX events_by_user ON events (user_id, position);

CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'agentlog events are append-only: UPDATE refused');
END;

CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'agentlog events are append-only: DELETE refused');
END;
