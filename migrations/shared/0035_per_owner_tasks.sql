-- Task ids are per owner (two users may each hold a task `t1`): the tasks read model and its
-- dependencies, documents, topics and comments are keyed by (user_id, task_id, …) and rebuilt
-- from the log, as a missing checkpoint makes the runner do.
DELETE FROM projection_dropped_indexes
WHERE table_name IN ('tasks', 'task_dependencies', 'task_documents', 'task_topics', 'task_comments');

DROP TABLE tasks;
CREATE TABLE tasks (
    task_id                 TEXT   NOT NULL,
    user_id                 TEXT   NOT NULL,
    identifier              TEXT   NOT NULL,
    name                    TEXT,
    instruction             TEXT   NOT NULL,
    description             TEXT,
    status                  TEXT   NOT NULL,
    priority                BIGINT NOT NULL,
    parent_task_id          TEXT,
    assignee_agent_id       TEXT,
    created_by_agent_id     TEXT,
    automation_mode         TEXT,
    heartbeat_interval_secs BIGINT,
    heartbeat_timeout_secs  BIGINT,
    last_heartbeat_at       BIGINT,
    next_heartbeat_at       BIGINT,
    heartbeat_tick_token    TEXT,
    schedule_pattern        TEXT,
    schedule_timezone       TEXT   NOT NULL,
    schedule_max_executions BIGINT,
    schedule_started_at     BIGINT,
    total_topics            BIGINT NOT NULL,
    max_topics              BIGINT,
    current_topic_id        TEXT,
    last_completed_topic_id TEXT,
    consecutive_failures    BIGINT NOT NULL,
    config                  TEXT   NOT NULL,
    error                   TEXT,
    started_at              BIGINT,
    completed_at            BIGINT,
    created_at              BIGINT NOT NULL,
    updated_at              BIGINT NOT NULL,
    heartbeat_require_input BIGINT NOT NULL DEFAULT 0,
    skipped_ticks           BIGINT NOT NULL DEFAULT 0,
    last_skipped_tick_at    BIGINT,
    PRIMARY KEY (user_id, task_id)
);
CREATE INDEX tasks_by_owner ON tasks (user_id, created_at, task_id);
CREATE INDEX tasks_by_owner_status ON tasks (user_id, status, created_at, task_id);
CREATE INDEX tasks_by_status ON tasks (status, created_at, task_id);
CREATE INDEX tasks_by_assignee ON tasks (assignee_agent_id, created_at, task_id);
CREATE INDEX tasks_by_parent ON tasks (user_id, parent_task_id, created_at, task_id);
CREATE INDEX tasks_by_identifier ON tasks (identifier);

DROP TABLE task_dependencies;
CREATE TABLE task_dependencies (
    task_id       TEXT   NOT NULL,
    depends_on_id TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    user_id       TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, task_id, depends_on_id)
);
CREATE INDEX task_dependencies_by_upstream ON task_dependencies (user_id, depends_on_id);

DROP TABLE task_documents;
CREATE TABLE task_documents (
    task_id     TEXT   NOT NULL,
    document_id TEXT   NOT NULL,
    pinned_by   TEXT   NOT NULL,
    user_id     TEXT   NOT NULL,
    pinned_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, task_id, document_id)
);

DROP TABLE task_topics;
CREATE TABLE task_topics (
    task_id       TEXT   NOT NULL,
    topic_id      TEXT   NOT NULL,
    user_id       TEXT   NOT NULL,
    seq           BIGINT NOT NULL,
    operation_id  TEXT   NOT NULL,
    agent_id      TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    run_trigger   TEXT   NOT NULL,
    handoff       TEXT,
    error         TEXT,
    error_code    TEXT,
    review_score  BIGINT,
    review_passed BIGINT,
    review_scores TEXT,
    reviewed_at   BIGINT,
    started_at    BIGINT NOT NULL,
    ended_at      BIGINT,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, task_id, topic_id)
);
CREATE INDEX task_topics_by_topic ON task_topics (topic_id);
CREATE INDEX task_topics_by_seq ON task_topics (user_id, task_id, seq, topic_id);

DROP TABLE task_comments;
CREATE TABLE task_comments (
    task_id     TEXT   NOT NULL,
    comment_id  TEXT   NOT NULL,
    user_id     TEXT   NOT NULL,
    author_kind TEXT   NOT NULL,
    author_id   TEXT   NOT NULL,
    content     TEXT   NOT NULL,
    brief_id    TEXT,
    topic_id    TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, task_id, comment_id)
);
CREATE INDEX task_comments_by_time ON task_comments (user_id, task_id, created_at, comment_id);

DELETE FROM projection_checkpoints WHERE name = 'tasks';
