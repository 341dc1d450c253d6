//! A VFS over SQLite's own (`unix`) that keeps a connection's map of the database file across
//! read transactions while the file's size has not changed.
//!
//! In WAL mode a connection whose read transaction begins after another connection's commit
//! empties its page cache and asks the VFS to unmap the whole file (`xUnfetch(0, NULL)`); its
//! next reads fault every page in again. On a busy log that is after nearly every commit, for
//! every reader: `munmap` (a TLB flush on every core) and the page faults were 8–11% of the
//! server's CPU (BENCHMARKS.md, "Mutation latency at size").
//!
//! SQLite unmaps because the file may have been truncated, or truncated and grown back, by
//! another connection while this one held no lock (its comment in `sqlite3PagerSharedLock`).
//! A shared map of a file on Linux shows the file's current pages (the page cache is one), so
//! what can go wrong with a kept map is only a page past the file's end (SIGBUS). This VFS
//! records the mapped part of the file's size (the size up to the map's limit, `PRAGMA
//! mmap_size`) when a map is made, forwards the unmap whenever that differs, and skips it
//! otherwise: the map then covers no page the file lost. In WAL mode only a checkpoint writes
//! the database file, so the size changes at most once per checkpoint; a file larger than the
//! limit keeps its map as it grows. Within a read transaction SQLite reads only pages of its
//! snapshot, which the file holds (a checkpoint never truncates below a snapshot a reader still
//! uses), exactly as with its own VFS, which keeps the map too while the WAL does not change.
//!
//! Linux only: elsewhere [`vfs_name`] is `None` and connections open through SQLite's default
//! VFS. Every [`Connection`](crate::connection::Connection) opens through it; sqlx's connections name it
//! with `SqliteConnectOptions::vfs` after [`register`]. Without a map (`PRAGMA mmap_size = 0`)
//! SQLite never fetches, and each unmap request (a checkpoint makes some) is forwarded.

// Elsewhere than on Linux the VFS is not registered (see `vfs_name`).
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::{
    ffi::{CStr, c_char, c_int, c_void},
    mem::{align_of, size_of},
    ptr,
    sync::OnceLock,
};

use libsqlite3_sys as ffi;

use crate::error::SqliteFailure;

/// The VFS's name, for `SqliteConnectOptions::vfs`, where it is used (Linux).
pub fn vfs_name() -> Option<&'static str> {
    if cfg!(target_os = "linux") { NAME.to_str().ok() } else { None }
}
const NAME: &CStr = c"agentlog-kept-map";

/// Register the VFS once per process (not as the default) where it is used; later calls return
/// the first's outcome.
pub fn register() -> Result<(), SqliteFailure> {
    static REGISTERED: OnceLock<Result<(), SqliteFailure>> = OnceLock::new();
    if vfs_name().is_none() {
        return Ok(());
    }
    REGISTERED.get_or_init(register_now).clone()
}

fn register_now() -> Result<(), SqliteFailure> {
    // SAFETY: initialising SQLite is idempotent and thread-safe in its default threading mode.
    let rc = unsafe { ffi::sqlite3_initialize() };
    if rc != ffi::SQLITE_OK {
        return Err(SqliteFailure { code: rc, message: "initialising SQLite".to_string() });
    }
    // SAFETY: `c"unix"` is NUL-terminated; the VFS list is SQLite's, read under its mutex.
    let unix = unsafe { ffi::sqlite3_vfs_find(c"unix".as_ptr()) };
    if unix.is_null() {
        return Err(SqliteFailure::new("SQLite has no unix VFS"));
    }
    // SAFETY: a registered VFS lives as long as the process.
    let inner = unsafe { *unix };
    let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
        szOsFile: c_int::try_from(INNER_OFFSET)
            .ok()
            .and_then(|offset| offset.checked_add(inner.szOsFile))
            .ok_or_else(|| SqliteFailure::new("the unix VFS's file is too large"))?,
        pNext: ptr::null_mut(),
        zName: NAME.as_ptr(),
        // Every other method is the unix VFS's own: they take no file, and those that read the
        // VFS read its `pAppData`, copied here with the rest.
        xOpen: Some(open),
        ..inner
    }));
    // Before registering: a connection may open by the name as soon as it is registered.
    UNIX.set(Unix(unix)).map_err(|_| SqliteFailure::new("the kept-map VFS registered twice"))?;
    // SAFETY: `vfs` is leaked, so it outlives every connection; `unix` stays registered.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    if rc != ffi::SQLITE_OK {
        return Err(SqliteFailure { code: rc, message: "registering the kept-map VFS".to_string() });
    }
    Ok(())
}

/// The unix VFS, which opens and does the work of every file.
struct Unix(*mut ffi::sqlite3_vfs);
// SAFETY: a registered VFS is immutable and SQLite calls it from any thread.
unsafe impl Send for Unix {}
// SAFETY: as above.
unsafe impl Sync for Unix {}
static UNIX: OnceLock<Unix> = OnceLock::new();

/// What SQLite allocates for a file of this VFS (`szOsFile` bytes): this header, then the unix
/// VFS's own file at [`INNER_OFFSET`].
#[repr(C)]
struct KeptMapFile {
    base: ffi::sqlite3_file,
    /// The mapped part of the file's size (see [`mapped_size`]) when the map was made; -1 while
    /// no map has been made since the last forwarded unmap.
    size_seen: i64,
    /// Whole-file unmap requests skipped and forwarded.
    skipped: u64,
    forwarded: u64,
}

/// Where the unix VFS's file starts in a [`KeptMapFile`]'s allocation.
const INNER_OFFSET: usize = size_of::<KeptMapFile>().next_multiple_of(align_of::<u64>());

/// The unix VFS's file inside `file`.
///
/// # Safety
/// `file` is a [`KeptMapFile`] allocated with this VFS's `szOsFile`.
unsafe fn inner(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: the allocation is `INNER_OFFSET` + the unix file's size (see `register_now`).
    unsafe { file.cast::<u8>().add(INNER_OFFSET).cast() }
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Unix(unix)) = UNIX.get() else { return ffi::SQLITE_ERROR };
    // SAFETY: SQLite hands a zeroed allocation of `szOsFile` bytes; the unix VFS opens its part.
    unsafe {
        let header = file.cast::<KeptMapFile>();
        (*header).base.pMethods = ptr::null();
        (*header).size_seen = -1;
        (*header).skipped = 0;
        (*header).forwarded = 0;
        let inner = inner(file);
        let Some(unix_open) = (**unix).xOpen else { return ffi::SQLITE_ERROR };
        let rc = unix_open(*unix, name, inner, flags, out_flags);
        // SQLite closes a file whose methods are set even when opening failed, and only then.
        if !(*inner).pMethods.is_null() {
            (*header).base.pMethods = &METHODS;
        }
        rc
    }
}

/// The unix file's method `$name`, called with the unix file and `$args`.
macro_rules! forward {
    ($file:expr, $name:ident $(, $arg:expr)*) => {{
        // SAFETY: `$file` is this VFS's (SQLite calls these methods only on files it opened),
        // and its unix file is open, so its methods are set.
        unsafe {
            let inner = inner($file);
            match (*(*inner).pMethods).$name {
                Some(method) => method(inner $(, $arg)*),
                None => ffi::SQLITE_IOERR,
            }
        }
    }};
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    forward!(file, xClose)
}
unsafe extern "C" fn read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    forward!(file, xRead, buf, amount, offset)
}
unsafe extern "C" fn write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    forward!(file, xWrite, buf, amount, offset)
}
unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    forward!(file, xTruncate, size)
}
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    forward!(file, xSync, flags)
}
unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    forward!(file, xFileSize, size)
}
unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(file, xLock, level)
}
unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(file, xUnlock, level)
}
unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(file, xCheckReservedLock, out)
}
unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    forward!(file, xFileControl, op, arg)
}
unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    forward!(file, xSectorSize)
}
unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    forward!(file, xDeviceCharacteristics)
}
unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    forward!(file, xShmMap, page, page_size, extend, out)
}
unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    forward!(file, xShmLock, offset, n, flags)
}
unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: as in `forward!`.
    unsafe {
        let inner = inner(file);
        if let Some(barrier) = (*(*inner).pMethods).xShmBarrier {
            barrier(inner);
        }
    }
}
unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    forward!(file, xShmUnmap, delete)
}

/// The file's size up to the map's limit (`PRAGMA mmap_size`): what a map made now would
/// cover. None when either cannot be read.
///
/// # Safety
/// `file` is this VFS's, open.
unsafe fn mapped_size(file: *mut ffi::sqlite3_file) -> Option<i64> {
    let mut size = -1i64;
    // -1 asks for the limit without changing it (`unixFileControl`).
    let mut limit = -1i64;
    // SAFETY: as the caller promises.
    unsafe {
        if file_size(file, &mut size) != ffi::SQLITE_OK
            || file_control(file, ffi::SQLITE_FCNTL_MMAP_SIZE, (&raw mut limit).cast()) != ffi::SQLITE_OK
        {
            return None;
        }
    }
    (size >= 0 && limit >= 0).then(|| size.min(limit))
}

/// Fetch a page through the map; a fetch that made the map records what it covers.
unsafe extern "C" fn fetch(file: *mut ffi::sqlite3_file, offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int {
    let rc = forward!(file, xFetch, offset, amount, out);
    // SAFETY: `file` is this VFS's, so it starts with a `KeptMapFile`; SQLite uses a file
    // from one thread at a time.
    unsafe {
        let header = file.cast::<KeptMapFile>();
        if (*header).size_seen < 0 {
            // The unix VFS mapped the file's size, up to the limit, a moment ago; should the
            // file grow in between, the next request sees a size unlike this one and unmaps.
            (*header).size_seen = mapped_size(file).unwrap_or(-1);
        }
    }
    rc
}

/// Release one fetched page, or (`page` NULL) unmap the whole file: skipped while the mapped
/// part of the file's size is the one the map was made with (the module's doc says why that is
/// safe).
unsafe extern "C" fn unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    if page.is_null() {
        // SAFETY: `file` is this VFS's, open, and starts with a `KeptMapFile`; SQLite uses a
        // file from one thread at a time.
        unsafe {
            let header = file.cast::<KeptMapFile>();
            let seen = (*header).size_seen;
            if seen >= 0 && mapped_size(file) == Some(seen) {
                (*header).skipped += 1;
                return ffi::SQLITE_OK;
            }
            (*header).size_seen = -1;
            (*header).forwarded += 1;
        }
    }
    forward!(file, xUnfetch, offset, page)
}

/// The methods of every file this VFS opens: the unix file's, through [`forward!`], but
/// [`unfetch`].
static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

/// The VFS's name as `sqlite3_open_v2` takes it: NULL (the default VFS) where it is not used.
pub(crate) fn name() -> *const c_char {
    if vfs_name().is_some() { NAME.as_ptr() } else { ptr::null() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        connection::{Connection, tests::TempFile},
        value::SqlValue,
    };

    /// The unmap requests `conn`'s database file skipped and forwarded.
    fn counts(conn: &Connection) -> (u64, u64) {
        let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
        // SAFETY: an open handle; the file pointer is the pager's, this VFS's file.
        unsafe {
            let rc = ffi::sqlite3_file_control(
                conn.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_FILE_POINTER,
                (&raw mut file).cast(),
            );
            assert_eq!(rc, ffi::SQLITE_OK);
            let header = &*file.cast::<KeptMapFile>();
            (header.skipped, header.forwarded)
        }
    }

    fn open(file: &TempFile) -> Connection {
        let settings = ["PRAGMA journal_mode = WAL", "PRAGMA mmap_size = 268435456", "PRAGMA wal_autocheckpoint = 0"];
        Connection::open(file.0.to_str().unwrap(), &settings.map(String::from)).unwrap()
    }

    fn count(conn: &mut Connection) -> i64 {
        let mut n = None;
        conn.for_each_row("SELECT count(*), sum(length(body)) FROM notes", &[], &mut |row| n = row.i64(0)).unwrap();
        n.unwrap()
    }

    /// The writer of `file`, which holds `rows` notes, all in the database file (none in the WAL).
    fn filled(file: &TempFile, rows: i64) -> Connection {
        let mut writer = open(file);
        writer.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", &[]).unwrap();
        insert(&mut writer, rows);
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)", &[]).unwrap();
        writer
    }

    fn insert(conn: &mut Connection, rows: i64) {
        conn.execute("BEGIN IMMEDIATE", &[]).unwrap();
        for _ in 0..rows {
            conn.execute("INSERT INTO notes (body) VALUES (?1)", &[SqlValue::Text("x".repeat(2_000))]).unwrap();
        }
        conn.execute("COMMIT", &[]).unwrap();
    }

    #[test]
    #[cfg_attr(not(target_os = "linux"), ignore = "the VFS is registered on Linux only")]
    fn a_reader_keeps_its_map_while_the_file_keeps_its_size() {
        let file = TempFile::new();
        let mut writer = filled(&file, 500);
        let mut reader = open(&file);
        assert_eq!(count(&mut reader), 500);
        let (skipped_before, forwarded_before) = counts(&reader);
        assert_eq!((skipped_before, forwarded_before), (0, 0));

        // Commits go to the WAL only: the database file keeps its size, so the reader, which
        // SQLite asks to unmap at each read after a commit, keeps its map, and reads every
        // commit's rows.
        for round in 1..=20 {
            insert(&mut writer, 1);
            assert_eq!(count(&mut reader), 500 + round);
        }
        let (skipped, forwarded) = counts(&reader);
        assert_eq!(skipped - skipped_before, 20, "one request skipped per commit");
        assert_eq!(forwarded, forwarded_before, "none forwarded");

        // A checkpoint grows the file: the next request is forwarded, and the map made again
        // shows the new pages.
        insert(&mut writer, 200);
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)", &[]).unwrap();
        assert_eq!(count(&mut reader), 720);
        assert_eq!(counts(&reader).1, forwarded + 1);
    }

    #[test]
    #[cfg_attr(not(target_os = "linux"), ignore = "the VFS is registered on Linux only")]
    fn a_file_larger_than_the_map_keeps_it_as_it_grows() {
        let file = TempFile::new();
        let mut writer = filled(&file, 200);
        let mut reader = open(&file);
        // A map of the first 64 KiB of a file of about 500 KiB.
        reader.execute("PRAGMA mmap_size = 65536", &[]).unwrap();
        assert_eq!(count(&mut reader), 200);
        let (skipped, forwarded) = counts(&reader);
        for round in 1..=5 {
            let size = std::fs::metadata(&file.0).unwrap().len();
            insert(&mut writer, 50);
            writer.execute("PRAGMA wal_checkpoint(TRUNCATE)", &[]).unwrap();
            assert!(std::fs::metadata(&file.0).unwrap().len() > size, "the file grew");
            assert_eq!(count(&mut reader), 200 + 50 * round);
        }
        // The file grew at every round, but stayed larger than the map: its map is the same.
        assert_eq!(counts(&reader), (skipped + 5, forwarded));
    }

    #[test]
    #[cfg_attr(not(target_os = "linux"), ignore = "the VFS is registered on Linux only")]
    fn a_reader_unmaps_a_file_that_shrank() {
        let file = TempFile::new();
        let mut writer = filled(&file, 2_000);
        let mut reader = open(&file);
        // Every page of the file is read through the map.
        assert_eq!(count(&mut reader), 2_000);
        let size_before = std::fs::metadata(&file.0).unwrap().len();
        let (_, forwarded) = counts(&reader);

        writer.execute("DELETE FROM notes WHERE id > 10", &[]).unwrap();
        writer.execute("VACUUM", &[]).unwrap();
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)", &[]).unwrap();
        assert!(std::fs::metadata(&file.0).unwrap().len() < size_before / 10, "the file shrank");

        assert_eq!(count(&mut reader), 10);
        assert_eq!(counts(&reader).1, forwarded + 1, "the shrunk file's map was dropped");
        insert(&mut writer, 3);
        assert_eq!(count(&mut reader), 13);
    }

    #[test]
    #[cfg_attr(not(target_os = "linux"), ignore = "the VFS is registered on Linux only")]
    fn registering_twice_is_harmless() {
        register().unwrap();
        register().unwrap();
        // SAFETY: a NUL-terminated name.
        let found = unsafe { ffi::sqlite3_vfs_find(NAME.as_ptr()) };
        assert!(!found.is_null());
        // SAFETY: a registered VFS.
        assert_eq!(unsafe { CStr::from_ptr((*found).zName) }.to_str().ok(), vfs_name());
    }
}
