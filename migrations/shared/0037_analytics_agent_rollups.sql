-- Analytics cells keyed by what reports group on. An agent id is its owner's, so the fleet
-- rollups no longer keep agents (they summed two users' `a1` into one): they are bucket x model
-- x provider x status over every owner and agent. analytics_agent_rollups is bucket x owner x
-- agent x model over every provider and status: a report by agent and model reads one row per
-- bucket of its answer. duration_histogram in every rollup table is compact text
-- (`bucket:count,...`, see analytics/histogram.rs); analytics is rebuilt from the log to fill them,
-- as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes
WHERE table_name = 'analytics_fleet_rollups';

DROP TABLE analytics_fleet_rollups;
CREATE TABLE analytics_fleet_rollups (
    rollup_key         TEXT   PRIMARY KEY,
    granularity        TEXT   NOT NULL,
    bucket_start       BIGINT NOT NULL,
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
CREATE INDEX analytics_fleet_rollups_by_bucket ON analytics_fleet_rollups (granularity, bucket_start);

CREATE TABLE analytics_agent_rollups (
    rollup_key         TEXT   PRIMARY KEY,
    granularity        TEXT   NOT NULL,
    bucket_start       BIGINT NOT NULL,
    user_id            TEXT   NOT NULL,
    agent_id           TEXT   NOT NULL,
    model              TEXT   NOT NULL,
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
CREATE INDEX analytics_agent_rollups_by_bucket ON analytics_agent_rollups (granularity, bucket_start);
CREATE INDEX analytics_agent_rollups_by_user ON analytics_agent_rollups (granularity, user_id, bucket_start);

DELETE FROM projection_checkpoints WHERE name = 'analytics';
