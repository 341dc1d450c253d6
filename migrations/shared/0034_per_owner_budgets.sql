-- Budget ids are per owner (two users may each hold a budget `b1`; a global budget is its
-- admin's and still limits every user): the budgets read model is keyed by (user_id, budget_id)
-- and rebuilt from the log, as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes WHERE table_name = 'budgets';

DROP TABLE budgets;
CREATE TABLE budgets (
    budget_id         TEXT   NOT NULL,
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
    updated_at        BIGINT NOT NULL,
    PRIMARY KEY (user_id, budget_id)
);
CREATE INDEX budgets_by_user ON budgets (user_id, created_at, budget_id);
CREATE INDEX budgets_by_scope ON budgets (scope, scope_id);

DELETE FROM projection_checkpoints WHERE name = 'budgets';
