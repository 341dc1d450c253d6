-- Secondary indexes of read-model tables that a bulk rebuild (`agentlog-replay rebuild`) dropped
-- and has not created again yet. The rebuild creates them again when it ends; a runner that
-- starts (a server, the next rebuild) creates any left here first, so a rebuild that dies midway
-- leaves no table without its indexes once the read models are opened again.
CREATE TABLE projection_dropped_indexes (
    index_name TEXT PRIMARY KEY,
    table_name TEXT NOT NULL,
    create_sql TEXT NOT NULL
);
