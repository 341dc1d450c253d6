-- How far each reactor (signal bus, …) has reacted. Reactors append with ids derived from the
-- event they react to, so re-reacting after a crash before the checkpoint moved is a no-op.
CREATE TABLE reactor_checkpoints (
    name       TEXT   PRIMARY KEY,
    position   BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
