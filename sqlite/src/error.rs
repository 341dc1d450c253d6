//! A statement's failure.

/// A statement's failure, with SQLite's own code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SQLite error {code}: {message}")]
pub struct SqliteFailure {
    /// SQLite's extended result code (`code & 0xff` is the primary one: 13 is SQLITE_FULL).
    pub code: i32,
    /// `sqlite3_errmsg`.
    pub message: String,
}

impl SqliteFailure {
    /// True when the disk is full (SQLITE_FULL).
    pub fn is_storage_full(&self) -> bool {
        self.code & 0xff == libsqlite3_sys::SQLITE_FULL
    }

    /// True for a failure that passes: the database busy or locked, out of memory, an I/O
    /// error, the disk full. The same statement may succeed later; the data is not at fault.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code & 0xff,
            libsqlite3_sys::SQLITE_BUSY
                | libsqlite3_sys::SQLITE_LOCKED
                | libsqlite3_sys::SQLITE_NOMEM
                | libsqlite3_sys::SQLITE_IOERR
                | libsqlite3_sys::SQLITE_FULL
        )
    }

    /// True when a UNIQUE, PRIMARY KEY or other constraint refused a write (SQLITE_CONSTRAINT).
    pub fn is_constraint(&self) -> bool {
        self.code & 0xff == libsqlite3_sys::SQLITE_CONSTRAINT
    }

    /// A failure found before SQLite was called (a path or statement it cannot take).
    pub fn new(message: impl Into<String>) -> Self {
        Self { code: libsqlite3_sys::SQLITE_MISUSE, message: message.into() }
    }
}
