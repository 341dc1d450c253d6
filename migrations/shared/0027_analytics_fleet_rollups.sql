-- The rollups of analytics_rollups summed over every owner: bucket (hour, day) x agent x model x
-- provider x status, same figures. An admin's analytics reads these, so its cost follows the
-- number of agents and models in the range, not the number of users.
CREATE TABLE analytics_fleet_rollups (
    rollup_key         TEXT   PRIMARY KEY,
    granularity        TEXT   NOT NULL,
    bucket_start       BIGINT NOT NULL,
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
CREATE INDEX analytics_fleet_rollups_by_bucket ON analytics_fleet_rollups (granularity, bucket_start);
