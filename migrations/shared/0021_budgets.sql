-- Budgets: the terms of each budget (`budget.*`). What a budget's scope spent is not stored
-- here: it is summed from `operation_steps` over the period, so it cannot drift from the log.
CREATE TABLE budgets (
    budget_id         TEXT   PRIMARY KEY,
    user_id           TEXT   NOT NULL,
    scope             TEXT   NOT NULL,
    scope_id          TEXT,
    period            TEXT   NOT NULL,
    time_zone         TEXT   NOT NULL,
    limit_cost_micros BIGINT,
    limit_tokens      BIGINT,
    warn_percent      BIGINT NOT NULL,
    action            TEXT   NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX budgets_by_user ON budgets (user_id, created_at, budget_id);
CREATE INDEX budgets_by_scope ON budgets (scope, scope_id);
-- A global budget sums every run's steps in its period.
CREATE INDEX operation_steps_by_at ON operation_steps (at);
