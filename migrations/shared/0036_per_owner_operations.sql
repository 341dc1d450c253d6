-- Operation ids are per owner (two users may each hold a run `op1`): the operations read model,
-- its steps, cards, artifacts, scores and async results, and analytics' runs are keyed by
-- (user_id, operation_id, …) and rebuilt from the log, as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes
WHERE table_name IN ('operations', 'operation_steps', 'operation_cards', 'operation_artifacts',
                     'operation_scores', 'operation_async_results', 'analytics_runs');

DROP TABLE operations;
CREATE TABLE operations (
    id                   TEXT   NOT NULL,
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
    state                TEXT   NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX operations_by_created ON operations (created_at, id);
CREATE INDEX operations_by_user ON operations (user_id, created_at, id);
CREATE INDEX operations_by_status ON operations (status, created_at, id);
CREATE INDEX operations_by_agent ON operations (agent_id, created_at, id);
CREATE INDEX operations_by_topic ON operations (topic_id, created_at, id);
CREATE INDEX operations_by_task ON operations (task_id, created_at, id);
CREATE INDEX operations_by_parent ON operations (user_id, parent_operation_id, created_at, id);

DROP TABLE operation_steps;
CREATE TABLE operation_steps (
    operation_id    TEXT   NOT NULL,
    step_index      BIGINT NOT NULL,
    user_id         TEXT   NOT NULL,
    phase           TEXT   NOT NULL,
    tool_calls      TEXT   NOT NULL,
    tool_call_count BIGINT NOT NULL,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    total_tokens    BIGINT,
    cost_micros     BIGINT,
    at              BIGINT NOT NULL,
    position        BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation_id, step_index)
);
CREATE INDEX operation_steps_by_at ON operation_steps (at);

DROP TABLE operation_cards;
CREATE TABLE operation_cards (
    operation_id   TEXT   NOT NULL,
    asked_position BIGINT NOT NULL,
    user_id        TEXT   NOT NULL,
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
    PRIMARY KEY (user_id, operation_id, asked_position)
);
CREATE INDEX operation_cards_pending ON operation_cards (outcome, deadline);

DROP TABLE operation_artifacts;
CREATE TABLE operation_artifacts (
    operation_id TEXT   NOT NULL,
    artifact_id  TEXT   NOT NULL,
    user_id      TEXT   NOT NULL,
    title        TEXT   NOT NULL,
    kind         TEXT   NOT NULL,
    size_bytes   BIGINT,
    content_ref  TEXT   NOT NULL,
    position     BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation_id, artifact_id)
);

DROP TABLE operation_scores;
CREATE TABLE operation_scores (
    operation_id TEXT   NOT NULL,
    seq          BIGINT NOT NULL,
    user_id      TEXT   NOT NULL,
    rubric_id    TEXT   NOT NULL,
    score        BIGINT NOT NULL,
    passed       BIGINT NOT NULL,
    reason       TEXT,
    position     BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation_id, seq)
);

DROP TABLE operation_async_results;
CREATE TABLE operation_async_results (
    operation_id   TEXT   NOT NULL,
    result_key     TEXT   NOT NULL,
    user_id        TEXT   NOT NULL,
    success        BIGINT NOT NULL,
    result         TEXT,
    truncated      BIGINT NOT NULL,
    original_chars BIGINT,
    resumed        BIGINT NOT NULL,
    position       BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation_id, result_key)
);

DROP TABLE analytics_runs;
CREATE TABLE analytics_runs (
    operation_id      TEXT   NOT NULL,
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
    updated_position  BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation_id)
);

DELETE FROM projection_checkpoints WHERE name IN ('operations', 'analytics');
