-- Read models of operations, agents, groups and analytics (see ARCHITECTURE.md, "Projections").
-- One file for SQLite and PostgreSQL: BIGINT, DOUBLE PRECISION and TEXT only;
-- JSON as TEXT; times as epoch microseconds; booleans as 0/1. Every `state` column holds the
-- fold's continuation (the domain state, serialized), so a batch can load a row, apply events
-- with the domain's own `evolve`, and write it back.

-- One row per operation (agent run).
CREATE TABLE operations (
    id                   TEXT   PRIMARY KEY,
    user_id              TEXT   NOT NULL,
    kind                 TEXT   NOT NULL,
    status               TEXT   NOT NULL,
    phase                TEXT,
    completion_reason    TEXT,
    agent_id             TEXT   NOT NULL,
    agent_config_version BIGINT NOT NULL,
    model                TEXT,
    provider             TEXT,
    topic_id             TEXT,
    thread_id            TEXT,
    task_id              TEXT,
    group_id             TEXT,
    parent_operation_id  TEXT,
    background           BIGINT NOT NULL,
    run_trigger          TEXT,
    instruction          TEXT,
    step_count           BIGINT NOT NULL,
    max_steps            BIGINT,
    cost_limit_micros    BIGINT,
    input_tokens         BIGINT,
    output_tokens        BIGINT,
    total_tokens         BIGINT,
    cost_micros          BIGINT,
    tool_calls           BIGINT,
    human_waiting_ms     BIGINT,
    pending_card         TEXT,
    awaiting             TEXT,
    child_count          BIGINT NOT NULL,
    lease_worker_id      TEXT,
    lease_expires_at     BIGINT,
    created_at           BIGINT NOT NULL,
    started_at           BIGINT,
    completed_at         BIGINT,
    duration_ms          BIGINT,
    result               TEXT,
    error                TEXT,
    interruption         TEXT,
    cancellation         TEXT,
    plan                 TEXT,
    todos                TEXT,
    updated_at           BIGINT NOT NULL,
    updated_position     BIGINT NOT NULL,
    state                TEXT   NOT NULL
);
CREATE INDEX operations_by_created ON operations (created_at, id);
CREATE INDEX operations_by_user ON operations (user_id, created_at, id);
CREATE INDEX operations_by_status ON operations (status, created_at, id);
CREATE INDEX operations_by_agent ON operations (agent_id, created_at, id);
CREATE INDEX operations_by_topic ON operations (topic_id, created_at, id);
CREATE INDEX operations_by_task ON operations (task_id, created_at, id);
CREATE INDEX operations_by_parent ON operations (parent_operation_id, created_at, id);

-- Every recorded step of every operation.
CREATE TABLE operation_steps (
    operation_id    TEXT   NOT NULL,
    step_index      BIGINT NOT NULL,
    phase           TEXT   NOT NULL,
    tool_calls      TEXT   NOT NULL,
    tool_call_count BIGINT NOT NULL,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    total_tokens    BIGINT,
    cost_micros     BIGINT,
    at              BIGINT NOT NULL,
    position        BIGINT NOT NULL,
    PRIMARY KEY (operation_id, step_index)
);

-- Every human-in-the-loop card asked, keyed by the position of its `operation.human_asked`.
CREATE TABLE operation_cards (
    operation_id   TEXT   NOT NULL,
    asked_position BIGINT NOT NULL,
    card_id        TEXT   NOT NULL,
    kind           TEXT   NOT NULL,
    title          TEXT   NOT NULL,
    card           TEXT   NOT NULL,
    asked_at       BIGINT NOT NULL,
    deadline       BIGINT,
    outcome        TEXT   NOT NULL,
    answer         TEXT,
    on_timeout     TEXT,
    waited_ms      BIGINT,
    closed_at      BIGINT,
    PRIMARY KEY (operation_id, asked_position)
);
CREATE INDEX operation_cards_pending ON operation_cards (outcome, deadline);

-- Artifacts a run produced.
CREATE TABLE operation_artifacts (
    operation_id TEXT   NOT NULL,
    artifact_id  TEXT   NOT NULL,
    title        TEXT   NOT NULL,
    kind         TEXT   NOT NULL,
    size_bytes   BIGINT,
    content_ref  TEXT   NOT NULL,
    position     BIGINT NOT NULL,
    PRIMARY KEY (operation_id, artifact_id)
);

-- Review scores of a run, in the order recorded.
CREATE TABLE operation_scores (
    operation_id TEXT   NOT NULL,
    seq          BIGINT NOT NULL,
    rubric_id    TEXT   NOT NULL,
    score        BIGINT NOT NULL,
    passed       BIGINT NOT NULL,
    reason       TEXT,
    position     BIGINT NOT NULL,
    PRIMARY KEY (operation_id, seq)
);

-- Results of async tools and child operations delivered to a run.
CREATE TABLE operation_async_results (
    operation_id   TEXT   NOT NULL,
    result_key     TEXT   NOT NULL,
    success        BIGINT NOT NULL,
    result         TEXT,
    truncated      BIGINT NOT NULL,
    original_chars BIGINT,
    resumed        BIGINT NOT NULL,
    position       BIGINT NOT NULL,
    PRIMARY KEY (operation_id, result_key)
);

-- The agent roster: the current config and its version.
CREATE TABLE agents (
    id               TEXT   PRIMARY KEY,
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
    state            TEXT   NOT NULL
);
CREATE INDEX agents_by_created ON agents (created_at, id);
CREATE INDEX agents_by_user ON agents (user_id, created_at, id);

-- Every config version of every agent ("which model and prompt did this run use").
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
    PRIMARY KEY (agent_id, version)
);

-- Chat groups of agents.
CREATE TABLE groups (
    id                  TEXT   PRIMARY KEY,
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
    state               TEXT   NOT NULL
);
CREATE INDEX groups_by_created ON groups (created_at, id);
CREATE INDEX groups_by_user ON groups (user_id, created_at, id);

-- Members of each group, as they are now.
CREATE TABLE group_members (
    group_id     TEXT   NOT NULL,
    agent_id     TEXT   NOT NULL,
    user_id      TEXT   NOT NULL,
    role         TEXT   NOT NULL,
    enabled      BIGINT NOT NULL,
    member_order BIGINT NOT NULL,
    PRIMARY KEY (group_id, agent_id)
);
CREATE INDEX group_members_by_agent ON group_members (agent_id);

-- What analytics remembers of each run until (and after) it is counted.
CREATE TABLE analytics_runs (
    operation_id      TEXT   PRIMARY KEY,
    user_id           TEXT   NOT NULL,
    agent_id          TEXT   NOT NULL,
    model             TEXT   NOT NULL,
    provider          TEXT   NOT NULL,
    created_at        BIGINT NOT NULL,
    started_at        BIGINT,
    input_tokens      BIGINT,
    output_tokens     BIGINT,
    total_tokens      BIGINT,
    cost_micros       BIGINT,
    status            TEXT,
    completion_reason TEXT,
    finished_at       BIGINT,
    duration_ms       BIGINT,
    updated_position  BIGINT NOT NULL
);

-- Finished runs rolled up by bucket (hour, day) x owner x agent x model x provider x status.
-- model and provider are '' when unknown. Token and cost sums are NULL while no run in the
-- cell measured them. duration_histogram: see analytics/histogram.rs.
CREATE TABLE analytics_rollups (
    rollup_key         TEXT   PRIMARY KEY,
    granularity        TEXT   NOT NULL,
    bucket_start       BIGINT NOT NULL,
    user_id            TEXT   NOT NULL,
    agent_id           TEXT   NOT NULL,
    model              TEXT   NOT NULL,
    provider           TEXT   NOT NULL,
    status             TEXT   NOT NULL,
    runs               BIGINT NOT NULL,
    input_tokens       BIGINT,
    output_tokens      BIGINT,
    total_tokens       BIGINT,
    cost_micros        BIGINT,
    duration_count     BIGINT NOT NULL,
    duration_sum_ms    BIGINT NOT NULL,
    duration_min_ms    BIGINT,
    duration_max_ms    BIGINT,
    duration_histogram TEXT   NOT NULL,
    completion_reasons TEXT   NOT NULL,
    updated_position   BIGINT NOT NULL
);
CREATE INDEX analytics_rollups_by_bucket ON analytics_rollups (granularity, bucket_start);
CREATE INDEX analytics_rollups_by_user ON analytics_rollups (granularity, user_id, bucket_start);
