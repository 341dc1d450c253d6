-- What each budget scope spent, kept by the operations projection as steps are recorded, so a
-- budget's standing (checked at every run's start and after every step) reads a few rows, not
-- every step of its period. Scopes: global (scope_id and user_id ''), user (scope_id = user_id),
-- agent, task, group (scope_id the agent, task or group; user_id the runs' owner). Granularity
-- `quarter`: 15-minute buckets in UTC (every zone's offset is a multiple of 15 minutes, so a
-- budget's days and months are whole buckets); `total`: one row per scope, bucket_start 0.
-- tokens counts a step's total, else input plus output; unmeasured counts 0. The operations
-- projection's version 3 rebuilds it at start to fill this table.
CREATE TABLE budget_spend_rollups (
    rollup_key       TEXT   PRIMARY KEY,
    scope            TEXT   NOT NULL,
    scope_id         TEXT   NOT NULL,
    user_id          TEXT   NOT NULL,
    granularity      TEXT   NOT NULL,
    bucket_start     BIGINT NOT NULL,
    cost_micros      BIGINT NOT NULL,
    tokens           BIGINT NOT NULL,
    updated_position BIGINT NOT NULL
);
CREATE INDEX budget_spend_rollups_by_scope ON budget_spend_rollups (scope, scope_id, user_id, granularity, bucket_start);
