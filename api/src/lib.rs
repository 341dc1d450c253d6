//! The agentlog server: GraphQL over axum, command handling, the read models and the reactors.
//!
//! ```text
//! agentlog serve                      # SQLite file agentlog.db in the working directory
//! agentlog serve --database postgres://user@host/db --bind 0.0.0.0:8080
//! agentlog token create --user alice  # a bearer token for alice
//! ```

pub mod auth;
pub mod commands;
pub mod console;
pub mod deltas;
pub mod error;
pub mod feed;
pub mod genai_metrics;
pub mod graphql;
mod histogram;
pub mod http;
pub mod metrics;
pub mod otlp;
pub mod over_http;
pub mod oversized;
pub mod quota;
pub mod reactors;
pub mod relay;
pub mod server;
pub mod shutdown;
pub mod sockets;
pub mod state;
