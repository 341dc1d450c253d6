-- Cron job and group ids are per owner (two users may each hold a job `j1`): their read models
-- are keyed by (user_id, id) and rebuilt from the log, as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes WHERE table_name IN ('cron_jobs', 'groups', 'group_members');

DROP TABLE cron_jobs;
CREATE TABLE cron_jobs (
    job_id               TEXT   NOT NULL,
    user_id              TEXT   NOT NULL,
    agent_id             TEXT   NOT NULL,
    group_id             TEXT,
    name                 TEXT,
    pattern              TEXT   NOT NULL,
    timezone             TEXT   NOT NULL,
    content              TEXT   NOT NULL,
    enabled              BIGINT NOT NULL,
    max_executions       BIGINT,
    remaining_executions BIGINT,
    conditions           TEXT   NOT NULL,
    last_executed_at     BIGINT,
    total_executions     BIGINT NOT NULL,
    last_fire_local_day  TEXT,
    fires_on_last_day    BIGINT NOT NULL,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    PRIMARY KEY (user_id, job_id)
);
CREATE INDEX cron_jobs_by_owner ON cron_jobs (user_id, created_at, job_id);
CREATE INDEX cron_jobs_by_agent ON cron_jobs (agent_id, created_at, job_id);
CREATE INDEX cron_jobs_dispatchable ON cron_jobs (last_executed_at, job_id) WHERE enabled = 1;

DROP TABLE group_members;
DROP TABLE groups;
CREATE TABLE groups (
    id                  TEXT   NOT NULL,
    user_id             TEXT   NOT NULL,
    title               TEXT   NOT NULL,
    config              TEXT   NOT NULL,
    max_rounds          BIGINT NOT NULL,
    member_count        BIGINT NOT NULL,
    supervisor_agent_id TEXT,
    deleted             BIGINT NOT NULL,
    orchestrations      TEXT   NOT NULL,
    orchestration_steps BIGINT NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    deleted_at          BIGINT,
    updated_position    BIGINT NOT NULL,
    state               TEXT   NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX groups_by_created ON groups (created_at, id);
CREATE INDEX groups_by_user ON groups (user_id, created_at, id);

CREATE TABLE group_members (
    group_id     TEXT   NOT NULL,
    agent_id     TEXT   NOT NULL,
    user_id      TEXT   NOT NULL,
    role         TEXT   NOT NULL,
    enabled      BIGINT NOT NULL,
    member_order BIGINT NOT NULL,
    PRIMARY KEY (user_id, group_id, agent_id)
);
CREATE INDEX group_members_by_agent ON group_members (agent_id);

DELETE FROM projection_checkpoints WHERE name IN ('cron_jobs', 'groups');
