-- Agent ids are per owner (two users may each hold an agent `a1`; the built-ins stay the
-- system's): the roster and its versions are keyed by (user_id, id) and rebuilt from the log,
-- as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes WHERE table_name IN ('agents', 'agent_versions');

DROP TABLE agents;
CREATE TABLE agents (
    id               TEXT   NOT NULL,
    user_id          TEXT   NOT NULL,
    slug             TEXT   NOT NULL,
    title            TEXT   NOT NULL,
    description      TEXT,
    model            TEXT,
    provider         TEXT,
    system_role      TEXT,
    plugins          TEXT   NOT NULL,
    kind             TEXT   NOT NULL,
    runtime          TEXT,
    capabilities     TEXT,
    builtin          BIGINT NOT NULL,
    archived         BIGINT NOT NULL,
    version          BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    archived_at      BIGINT,
    updated_position BIGINT NOT NULL,
    state            TEXT   NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX agents_by_created ON agents (created_at, id);
CREATE INDEX agents_by_user ON agents (user_id, created_at, id);

DROP TABLE agent_versions;
CREATE TABLE agent_versions (
    agent_id    TEXT   NOT NULL,
    version     BIGINT NOT NULL,
    user_id     TEXT   NOT NULL,
    config      TEXT   NOT NULL,
    changed     TEXT   NOT NULL,
    model       TEXT,
    provider    TEXT,
    system_role TEXT,
    recorded_at BIGINT NOT NULL,
    position    BIGINT NOT NULL,
    PRIMARY KEY (user_id, agent_id, version)
);

DELETE FROM projection_checkpoints WHERE name = 'agents';
