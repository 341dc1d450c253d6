//! SQLite connections of agentlog's own, for the hot paths: the file's writer (the log's and the
//! read models', lent by [`WriteGate`]), the log's readers, and the read models' readers.
//!
//! sqlx runs a SQLite connection on a worker thread and hands every statement, every bound
//! value and every fetched row across a channel to it and back, copying each value. A
//! [`Connection`] here runs each statement on the calling thread, keeps it prepared by its SQL
//! text, binds borrowed values in place, and steps it.
//!
//! ```no_run
//! # fn demo() -> Result<(), agentlog_sqlite::SqliteFailure> {
//! use agentlog_sqlite::{Connection, SqlRef, SqlValue};
//!
//! let mut conn = Connection::open("agentlog.db", &["PRAGMA busy_timeout = 30000".to_string()])?;
//! conn.execute("BEGIN IMMEDIATE", &[])?;
//! conn.execute_refs("INSERT INTO notes (id, body) VALUES (?1, ?2)", &[SqlRef::Int(1), SqlRef::Text("hello")])?;
//! conn.execute("COMMIT", &[])?;
//! conn.for_each_row("SELECT body FROM notes WHERE id = ?1", &[SqlValue::Int(1)], &mut |row| {
//!     println!("{:?}", row.str(0));
//! })?;
//! # Ok(()) }
//! ```
//!
//! Every connection opens through [`kept_map`], a VFS over SQLite's own that keeps a
//! connection's map of the file across read transactions while the file's size is unchanged.
//!
//! Values map as sqlx maps them (`Int` ↔ INTEGER, `Float` ↔ REAL, `Text` ↔ TEXT; a BLOB, or
//! text that is not UTF-8, reads as NULL), so tables written either way are identical.

mod connection;
mod error;
mod gate;
pub mod kept_map;
mod readers;
mod value;

pub use connection::Connection;
pub use error::SqliteFailure;
pub use gate::{BUSY_TIMEOUT, GateTurn, WriteGate};
pub use readers::Readers;
pub use value::{Row, SqlRef, SqlValue};
