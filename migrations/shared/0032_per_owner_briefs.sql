-- Brief ids are per owner (two users may each hold a brief `b1`): the briefs read model is keyed
-- by (user_id, brief_id) and rebuilt from the log, as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes WHERE table_name = 'briefs';

DROP TABLE briefs;
CREATE TABLE briefs (
    brief_id         TEXT   NOT NULL,
    user_id          TEXT   NOT NULL,
    brief_type       TEXT   NOT NULL,
    priority         TEXT   NOT NULL,
    title            TEXT   NOT NULL,
    summary          TEXT   NOT NULL,
    actions          TEXT   NOT NULL,
    documents        TEXT   NOT NULL,
    task_id          TEXT,
    topic_id         TEXT,
    operation_id     TEXT,
    cron_job_id      TEXT,
    agent_id         TEXT,
    brief_trigger    TEXT,
    error_code       TEXT,
    metadata         TEXT,
    read_at          BIGINT,
    resolved_action  TEXT,
    resolved_comment TEXT,
    resolved_at      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    PRIMARY KEY (user_id, brief_id)
);
CREATE INDEX briefs_by_owner ON briefs (user_id, created_at, brief_id);
CREATE INDEX briefs_unresolved ON briefs (user_id, created_at, brief_id) WHERE resolved_at IS NULL;
CREATE INDEX briefs_by_task ON briefs (task_id, created_at, brief_id);
CREATE INDEX briefs_by_time ON briefs (created_at, brief_id);

DELETE FROM projection_checkpoints WHERE name = 'briefs';
