//! Reader connections on one file, kept open between queries.

use std::sync::Mutex;

use crate::{connection::Connection, error::SqliteFailure};

/// Idle reader connections on one database file, each opened on first need with the same
/// settings and put back after its query. Every query runs on the calling thread, so no more
/// readers are open at once than threads running queries; at most `keep` stay idle.
#[derive(Debug)]
pub struct Readers {
    filename: String,
    settings: Vec<String>,
    keep: usize,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    /// Readers on `filename`, each opened with `settings` (`PRAGMA …`), at most `keep` idle.
    pub fn new(filename: impl Into<String>, settings: Vec<String>, keep: usize) -> Self {
        Self { filename: filename.into(), settings, keep: keep.max(1), idle: Mutex::new(Vec::new()) }
    }

    /// Run `work` on an idle reader (a new one when none is idle), then put it back; the outer
    /// error is a reader that could not be opened, the inner one is `work`'s.
    pub fn with<T, E>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, E>,
    ) -> Result<Result<T, E>, SqliteFailure> {
        let mut conn = self.take()?;
        let result = work(&mut conn);
        // A failed read leaves nothing open (statements are reset after each run), unless it
        // failed inside a transaction the work began: such a reader is dropped, not kept.
        self.give_back(conn);
        Ok(result)
    }

    /// An idle reader (a new one when none is idle), lent until [`Readers::give_back`]: for
    /// work that spans several queries, such as one read transaction.
    pub fn take(&self) -> Result<Connection, SqliteFailure> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(conn) => Ok(conn),
            None => Connection::open(&self.filename, &self.settings),
        }
    }

    /// Put back a reader from [`Readers::take`]; one still in a transaction is dropped.
    pub fn give_back(&self, conn: Connection) {
        if !conn.in_transaction() {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < self.keep {
                idle.push(conn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{connection::tests::TempFile, value::SqlValue};

    #[test]
    fn a_reader_is_kept_and_sees_later_commits() {
        let file = TempFile::new();
        let mut writer = file.open();
        writer.execute("CREATE TABLE t (v INTEGER)", &[]).unwrap();
        let readers = Readers::new(file.0.to_string_lossy(), Vec::new(), 1);
        let count = |readers: &Readers| {
            readers
                .with(|c| {
                    let mut n = None;
                    c.for_each_row("SELECT COUNT(*) FROM t", &[], &mut |r| n = r.i64(0))?;
                    Ok::<_, SqliteFailure>(n)
                })
                .unwrap()
                .unwrap()
        };
        assert_eq!(count(&readers), Some(0));
        writer.execute("INSERT INTO t (v) VALUES (?1)", &[SqlValue::Int(1)]).unwrap();
        assert_eq!(count(&readers), Some(1), "the kept reader sees what was committed after it opened");
        assert_eq!(readers.idle.lock().unwrap().len(), 1);
        let failed = readers.with(|c| c.execute("SELECT * FROM missing", &[])).unwrap();
        assert!(failed.is_err());
        assert_eq!(readers.idle.lock().unwrap().len(), 1, "a failed query keeps its reader");
    }
}
