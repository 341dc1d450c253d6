-- Projection checkpoints and the chains read model. Read-model SQL is portable between SQLite
-- and PostgreSQL: BIGINT, DOUBLE PRECISION and TEXT only (JSON as TEXT, times as epoch µs).
CREATE TABLE projection_checkpoints (
    name       TEXT    PRIMARY KEY,
    version    INTEGER NOT NULL,
    position   BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL
);

CREATE TABLE chains (
    event_id       TEXT   PRIMARY KEY,
    position       BIGINT NOT NULL,
    root_source_id TEXT   NOT NULL,
    parent_node_id TEXT,
    event_type     TEXT   NOT NULL,
    stream_id      TEXT   NOT NULL,
    user_id        TEXT   NOT NULL,
    recorded_at    BIGINT NOT NULL
);
CREATE INDEX chains_by_root ON chains (root_source_id, position);
CREATE INDEX chains_by_parent ON chains (parent_node_id);
