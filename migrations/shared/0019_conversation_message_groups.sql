-- A topic's message groups (compression and parallel), as `conversation.message_group_created`
-- records them; a removed group's row is deleted. The conversation tree reads them with the
-- topic's messages.
CREATE TABLE conversation_message_groups (
    topic_id           TEXT   NOT NULL,
    group_id           TEXT   NOT NULL,
    user_id            TEXT   NOT NULL,
    seq                BIGINT NOT NULL,
    kind               TEXT   NOT NULL,
    message_ids        TEXT   NOT NULL,
    pinned_message_ids TEXT   NOT NULL,
    parent_message_id  TEXT,
    content            TEXT,
    title              TEXT,
    description        TEXT,
    metadata           TEXT,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (topic_id, group_id)
);
