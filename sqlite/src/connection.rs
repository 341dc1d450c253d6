//! One SQLite connection with its prepared statements.

use std::{
    collections::HashMap,
    ffi::{CStr, CString, c_char, c_int},
    ptr::{self, NonNull},
};

use libsqlite3_sys as ffi;

use crate::{
    error::SqliteFailure,
    value::{Row, SqlRef, SqlValue},
};

/// Prepared statements a connection keeps; past this it finalizes them all and starts again
/// (statements whose text carries a key count, `IN (?1 … ?n)`, would otherwise pile up).
const MAX_STATEMENTS: usize = 512;

/// An open SQLite connection with its prepared statements. One thread uses it at a time;
/// every call runs on the calling thread (a commit's `fsync` included).
pub struct Connection {
    db: NonNull<ffi::sqlite3>,
    statements: HashMap<String, NonNull<ffi::sqlite3_stmt>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("statements", &self.statements.len()).finish()
    }
}

// SAFETY: `&mut self` on every call that runs a statement, and `Connection` not being `Sync`
// (no `&Connection` on two threads), make one thread use the handle and its statements at a
// time: what SQLite's multi-thread mode (`SQLITE_OPEN_NOMUTEX`) asks of its caller. SQLite is
// built thread-safe (libsqlite3-sys's default, SQLITE_THREADSAFE=1), so what connections
// share (the page-cache allocator, the file's locks) keeps its own mutexes.
unsafe impl Send for Connection {}

impl Connection {
    /// Open the existing file `filename` read-write and run each of `settings` (`PRAGMA …`).
    pub fn open(filename: &str, settings: &[String]) -> Result<Self, SqliteFailure> {
        let path = CString::new(filename).map_err(|_| SqliteFailure::new("database path contains a NUL byte"))?;
        crate::kept_map::register()?;
        let mut db = ptr::null_mut();
        // SAFETY: `path` is NUL-terminated; on failure SQLite may still hand back a handle,
        // which is closed below.
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                path.as_ptr(),
                &mut db,
                // No mutex per connection: one thread at a time uses it (see `Send` above);
                // serialized mode took and released one on every call, about a tenth of a
                // rebuild's CPU (BENCHMARKS.md, "Bulk tools").
                ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX | ffi::SQLITE_OPEN_PRIVATECACHE,
                crate::kept_map::name(),
            )
        };
        let Some(db) = NonNull::new(db) else { return Err(SqliteFailure::new("out of memory opening SQLite")) };
        let mut conn = Self { db, statements: HashMap::new() };
        if rc != ffi::SQLITE_OK {
            return Err(conn.failure());
        }
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_extended_result_codes(db.as_ptr(), 1) };
        for setting in settings {
            conn.execute(setting, &[])?;
        }
        Ok(conn)
    }

    /// The SQLite handle, for this crate's tests.
    #[cfg(test)]
    pub(crate) fn handle(&self) -> *mut ffi::sqlite3 {
        self.db.as_ptr()
    }

    /// Is a transaction open on this connection?
    pub fn in_transaction(&self) -> bool {
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_get_autocommit(self.db.as_ptr()) == 0 }
    }

    fn failure(&self) -> SqliteFailure {
        // SAFETY: an open handle; the message is copied before any other call.
        unsafe {
            let code = ffi::sqlite3_extended_errcode(self.db.as_ptr());
            let message = CStr::from_ptr(ffi::sqlite3_errmsg(self.db.as_ptr())).to_string_lossy().into_owned();
            SqliteFailure { code, message }
        }
    }

    /// The prepared statement of `sql` (one statement), prepared now if it is not kept yet.
    fn statement(&mut self, sql: &str) -> Result<Statement<'_>, SqliteFailure> {
        if !self.statements.contains_key(sql) {
            if self.statements.len() >= MAX_STATEMENTS {
                self.finalize_all();
            }
            let len = c_int::try_from(sql.len()).map_err(|_| SqliteFailure::new("statement too long"))?;
            let mut raw = ptr::null_mut();
            // SAFETY: `sql` outlives the call and its length is passed, so it needs no NUL.
            let rc = unsafe {
                ffi::sqlite3_prepare_v3(
                    self.db.as_ptr(),
                    sql.as_ptr().cast::<c_char>(),
                    len,
                    ffi::SQLITE_PREPARE_PERSISTENT,
                    &mut raw,
                    ptr::null_mut(),
                )
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.failure());
            }
            let raw = NonNull::new(raw).ok_or_else(|| SqliteFailure::new(format!("no statement in `{sql}`")))?;
            self.statements.insert(sql.to_string(), raw);
        }
        let raw = self.statements[sql];
        Ok(Statement { raw, conn: self })
    }

    fn finalize_all(&mut self) {
        for (_, stmt) in self.statements.drain() {
            // SAFETY: each kept statement is finalized once.
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
        }
    }

    /// Run one statement; the rows it changed.
    pub fn execute(&mut self, sql: &str, args: &[SqlValue]) -> Result<u64, SqliteFailure> {
        self.execute_with(sql, args.iter().map(SqlValue::as_ref))
    }

    /// [`execute`](Self::execute) with borrowed values.
    pub fn execute_refs(&mut self, sql: &str, args: &[SqlRef<'_>]) -> Result<u64, SqliteFailure> {
        self.execute_with(sql, args.iter().copied())
    }

    fn execute_with<'v>(&mut self, sql: &str, args: impl Iterator<Item = SqlRef<'v>>) -> Result<u64, SqliteFailure> {
        {
            let mut stmt = self.statement(sql)?;
            stmt.bind(args)?;
            stmt.run(None)?;
        }
        // SAFETY: an open handle.
        Ok(u64::try_from(unsafe { ffi::sqlite3_changes64(self.db.as_ptr()) }).unwrap_or(0))
    }

    /// Run one query, handing each row to `each`; the number of rows.
    pub fn for_each_row(
        &mut self,
        sql: &str,
        args: &[SqlValue],
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, SqliteFailure> {
        let mut stmt = self.statement(sql)?;
        stmt.bind(args.iter().map(SqlValue::as_ref))?;
        stmt.run(Some(each))
    }

    /// [`for_each_row`](Self::for_each_row) with borrowed values.
    pub fn for_each_row_refs(
        &mut self,
        sql: &str,
        args: &[SqlRef<'_>],
        each: &mut dyn FnMut(Row),
    ) -> Result<u64, SqliteFailure> {
        let mut stmt = self.statement(sql)?;
        stmt.bind(args.iter().copied())?;
        stmt.run(Some(each))
    }

    /// Run the one-row statement `sql` once per row of `rows` (prepared once, bound per row).
    pub fn run_per_row(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<(), SqliteFailure> {
        let mut stmt = self.statement(sql)?;
        for row in rows {
            stmt.bind(row.iter().map(SqlValue::as_ref))?;
            stmt.run(None)?;
        }
        Ok(())
    }

    /// [`run_per_row`](Self::run_per_row) with each row's borrowed values made by `bind`
    /// into the buffer it is given (cleared before each row).
    pub fn run_per_row_with<T>(
        &mut self,
        sql: &str,
        rows: impl IntoIterator<Item = T>,
        mut bind: impl for<'r> FnMut(&'r T, &mut Vec<SqlRef<'r>>),
    ) -> Result<(), SqliteFailure> {
        let mut stmt = self.statement(sql)?;
        for row in rows {
            let mut values = Vec::new();
            bind(&row, &mut values);
            stmt.bind(values.iter().copied())?;
            let ran = stmt.run(None);
            // `row` is dropped next: no binding may point into it.
            stmt.clear_bindings();
            ran?;
        }
        Ok(())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.finalize_all();
        // SAFETY: every statement is finalized; the handle is closed once.
        unsafe { ffi::sqlite3_close(self.db.as_ptr()) };
    }
}

/// A kept statement in use; reset and unbound when dropped, so it holds no read lock and no
/// pointer into the caller's values once the call returns.
struct Statement<'c> {
    raw: NonNull<ffi::sqlite3_stmt>,
    conn: &'c Connection,
}

impl Statement<'_> {
    /// Bind `args` to parameters 1…n. Text is bound without a copy: the values outlive every
    /// step, and the bindings are cleared before the call returns.
    fn bind<'v>(&mut self, args: impl Iterator<Item = SqlRef<'v>>) -> Result<(), SqliteFailure> {
        let stmt = self.raw.as_ptr();
        for (i, value) in args.enumerate() {
            let at = c_int::try_from(i + 1).map_err(|_| SqliteFailure::new("too many parameters"))?;
            // SAFETY: a live statement; text pointers stay valid while `args` is borrowed
            // (SQLITE_STATIC), and lengths are passed.
            let rc = unsafe {
                match value {
                    SqlRef::Null => ffi::sqlite3_bind_null(stmt, at),
                    SqlRef::Int(v) => ffi::sqlite3_bind_int64(stmt, at, v),
                    SqlRef::Float(v) => ffi::sqlite3_bind_double(stmt, at, v),
                    SqlRef::Text(s) => ffi::sqlite3_bind_text64(
                        stmt,
                        at,
                        s.as_ptr().cast::<c_char>(),
                        s.len() as u64,
                        ffi::SQLITE_STATIC(),
                        ffi::SQLITE_UTF8 as u8,
                    ),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.conn.failure());
            }
        }
        Ok(())
    }

    /// Step to the end, handing each row to `each`; then reset for the next binding. The number
    /// of rows.
    fn run(&mut self, mut each: Option<&mut dyn FnMut(Row)>) -> Result<u64, SqliteFailure> {
        let stmt = self.raw.as_ptr();
        let mut n = 0;
        let result = loop {
            // SAFETY: a live statement of the open handle.
            match unsafe { ffi::sqlite3_step(stmt) } {
                ffi::SQLITE_ROW => {
                    if let Some(each) = each.as_mut() {
                        each(self.row());
                    }
                    n += 1;
                }
                ffi::SQLITE_DONE => break Ok(n),
                _ => break Err(self.conn.failure()),
            }
        };
        // SAFETY: as above (resetting after a failure returns that failure again, already taken).
        unsafe { ffi::sqlite3_reset(stmt) };
        result
    }

    fn clear_bindings(&mut self) {
        // SAFETY: a live statement.
        unsafe { ffi::sqlite3_clear_bindings(self.raw.as_ptr()) };
    }

    /// The current row's columns.
    fn row(&self) -> Row {
        let stmt = self.raw.as_ptr();
        // SAFETY: called only while `sqlite3_step` returned SQLITE_ROW; column indexes are in
        // range; text is read with its byte length before any other call on the column.
        unsafe {
            let width = ffi::sqlite3_column_count(stmt);
            let mut out = Vec::with_capacity(usize::try_from(width).unwrap_or(0));
            for i in 0..width {
                out.push(match ffi::sqlite3_column_type(stmt, i) {
                    ffi::SQLITE_INTEGER => SqlValue::Int(ffi::sqlite3_column_int64(stmt, i)),
                    ffi::SQLITE_FLOAT => SqlValue::Float(ffi::sqlite3_column_double(stmt, i)),
                    ffi::SQLITE_TEXT => {
                        let text = ffi::sqlite3_column_text(stmt, i);
                        let len = usize::try_from(ffi::sqlite3_column_bytes(stmt, i)).unwrap_or(0);
                        if text.is_null() {
                            SqlValue::Null
                        } else {
                            let bytes = std::slice::from_raw_parts(text, len);
                            std::str::from_utf8(bytes).map_or(SqlValue::Null, |s| SqlValue::Text(s.to_owned()))
                        }
                    }
                    _ => SqlValue::Null,
                });
            }
            Row(out)
        }
    }
}

impl Drop for Statement<'_> {
    fn drop(&mut self) {
        // SAFETY: a live statement; clearing drops the pointers into the caller's values.
        unsafe {
            ffi::sqlite3_reset(self.raw.as_ptr());
            ffi::sqlite3_clear_bindings(self.raw.as_ptr());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A new empty database file, removed when dropped.
    pub(crate) struct TempFile(pub(crate) std::path::PathBuf);

    impl TempFile {
        pub(crate) fn new() -> Self {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "agentlog-sqlite-{}-{}.db",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::File::create(&path).unwrap();
            Self(path)
        }

        pub(crate) fn open(&self) -> Connection {
            Connection::open(self.0.to_str().unwrap(), &["PRAGMA journal_mode = WAL".to_string()]).unwrap()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
            }
        }
    }

    fn rows(conn: &mut Connection, sql: &str) -> Vec<Row> {
        let mut out = Vec::new();
        conn.for_each_row(sql, &[], &mut |row| out.push(row)).unwrap();
        out
    }

    #[test]
    fn values_round_trip_with_sqlx_storage_types() {
        let file = TempFile::new();
        let mut conn = file.open();
        conn.execute("CREATE TABLE t (a, b, c, d)", &[]).unwrap();
        let changed = conn
            .execute_refs(
                "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
                &[SqlRef::Int(7), SqlRef::Float(1.5), SqlRef::Text("héllo"), SqlRef::Null],
            )
            .unwrap();
        assert_eq!(changed, 1);
        let got = rows(&mut conn, "SELECT a, b, c, d, typeof(a), typeof(b), typeof(c), typeof(d) FROM t");
        assert_eq!(
            got,
            vec![Row(vec![
                SqlValue::Int(7),
                SqlValue::Float(1.5),
                SqlValue::Text("héllo".into()),
                SqlValue::Null,
                SqlValue::Text("integer".into()),
                SqlValue::Text("real".into()),
                SqlValue::Text("text".into()),
                SqlValue::Text("null".into()),
            ])]
        );
    }

    /// A row that binds fewer values than the one before it gets NULL for the rest, never a
    /// pointer into the earlier row (which is dropped by then).
    #[test]
    fn each_row_binds_only_its_own_values() {
        let file = TempFile::new();
        let mut conn = file.open();
        conn.execute("CREATE TABLE t (a TEXT, b TEXT)", &[]).unwrap();
        let input = vec![vec!["x".to_string(), "y".to_string()], vec!["z".to_string()]];
        conn.run_per_row_with("INSERT INTO t VALUES (?1, ?2)", input, |row: &Vec<String>, values| {
            values.extend(row.iter().map(|s| SqlRef::Text(s)));
        })
        .unwrap();
        assert_eq!(
            rows(&mut conn, "SELECT a, b FROM t ORDER BY a"),
            vec![
                Row(vec![SqlValue::Text("x".into()), SqlValue::Text("y".into())]),
                Row(vec![SqlValue::Text("z".into()), SqlValue::Null]),
            ]
        );
    }

    /// A refused write says so, leaves nothing of itself, and its kept statement runs again.
    #[test]
    fn a_constraint_failure_is_reported_and_the_statement_reused() {
        let file = TempFile::new();
        let mut conn = file.open();
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", &[]).unwrap();
        let insert = "INSERT INTO t VALUES (?1)";
        conn.execute(insert, &[SqlValue::Int(1)]).unwrap();
        let refused = conn.execute(insert, &[SqlValue::Int(1)]).unwrap_err();
        assert!(refused.is_constraint(), "{refused}");
        assert!(!refused.is_storage_full());
        conn.execute(insert, &[SqlValue::Int(2)]).unwrap();
        assert_eq!(rows(&mut conn, "SELECT count(*) FROM t"), vec![Row(vec![SqlValue::Int(2)])]);
    }

    #[test]
    fn a_missing_file_is_not_created() {
        let path = std::env::temp_dir().join(format!("agentlog-sqlite-missing-{}.db", std::process::id()));
        assert!(Connection::open(path.to_str().unwrap(), &[]).is_err());
        assert!(!path.exists());
    }
}
