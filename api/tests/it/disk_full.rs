//! The database's disk fills up. The test makes a small filesystem of its own (a tmpfs, which
//! needs root to mount: without it the test says SKIPPED and passes), puts the database on it
//! (the SQLite file and its WAL, or a private PostgreSQL server's data directory), writes until
//! a filler file has taken the last byte, and then:
//! - every mutation on the full disk is either acknowledged or refused with STORAGE_FULL (or
//!   UNAVAILABLE while PostgreSQL restarts after failing to write its WAL), each within seconds,
//!   never INTERNAL and never a hang; a refused one wrote nothing;
//! - once the filler is deleted, mutations succeed again without restarting agentlog (a
//!   PostgreSQL that gave up while its disk was full is started again, as an operator would);
//! - every acknowledged mutation is in the log, the log passes verify's checks, and the read
//!   models equal a rebuild.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::{
    db_faults::PrivatePostgres,
    support::{Db, Server, check_log, error_code, read_log, verify_read_models},
};

/// A tmpfs of its own, unmounted on drop.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    /// Mount one of `megabytes`, or None (and say why) when this process may not mount.
    fn mount(test: &str, megabytes: u32) -> Option<Self> {
        let dir = std::env::temp_dir().join(format!("agentlog-small-disk-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m,mode=0777"), "tmpfs"])
            .arg(&dir)
            .output();
        match mounted {
            Ok(o) if o.status.success() => Some(Self { dir }),
            Ok(o) => {
                eprintln!("SKIPPED {test}: cannot mount a small tmpfs ({})", String::from_utf8_lossy(&o.stderr).trim());
                let _ = std::fs::remove_dir(&dir);
                None
            }
            Err(e) => {
                eprintln!("SKIPPED {test}: no mount command ({e})");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }

    /// Take every free byte with a filler file; answers its size.
    fn fill(&self) -> u64 {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(self.filler()).expect("filler");
        let block = vec![0u8; 64 * 1024];
        let mut written = 0u64;
        // Then smaller pieces, down to single bytes, so nothing is left.
        for size in [block.len(), 4096, 1] {
            while file.write_all(&block[..size]).is_ok() {
                written += size as u64;
            }
        }
        let _ = file.flush();
        written
    }

    /// Delete the filler.
    fn free(&self) {
        std::fs::remove_file(self.filler()).expect("delete the filler");
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

const CREATE: &str = "mutation($i: JSON!, $r: String) { createTask(input: $i, requestId: $r) { position } }";

/// One task with a large instruction (the disk fills quickly).
async fn create_task(s: &Server, token: &str, n: usize) -> (Duration, Value) {
    let id = format!("task-{n}");
    let input = json!({"taskId": id, "identifier": format!("T-{n}"), "instruction": "x".repeat(16 * 1024)});
    let asked = Instant::now();
    let r = s.gql(Some(token), CREATE, json!({"i": input, "r": id})).await;
    (asked.elapsed(), r)
}

/// What the writes did: acknowledged task numbers, and those refused as out of space.
#[derive(Default)]
struct Outcomes {
    acknowledged: Vec<usize>,
    refused_full: Vec<usize>,
}

async fn writes_on_a_full_disk(s: &Server, disk: &SmallDisk, pg: Option<&PrivatePostgres>) -> Outcomes {
    let token = s.admin_token.clone();
    let mut out = Outcomes::default();
    let mut n = 0;
    for _ in 0..10 {
        n += 1;
        let (_, r) = create_task(s, &token, n).await;
        assert!(r.get("errors").is_none(), "before the disk fills: {r}");
        out.acknowledged.push(n);
    }
    let filled = disk.fill();
    eprintln!("filled the last {filled} bytes of the disk");
    // Write until the database has refused several times (a little space may be left in
    // pages and WAL segments it already holds).
    let mut refusals = 0;
    while refusals < 5 {
        n += 1;
        assert!(n < 2_000, "the full disk never refused a write");
        let (took, r) = create_task(s, &token, n).await;
        assert!(took < Duration::from_secs(15), "a write on the full disk answered after {took:?}: {r}");
        match error_code(&r).as_deref() {
            None => out.acknowledged.push(n),
            Some("STORAGE_FULL") => {
                refusals += 1;
                out.refused_full.push(n);
            }
            // PostgreSQL that cannot write its WAL stops and restarts its backends.
            Some("UNAVAILABLE") if pg.is_some() => refusals += 1,
            Some(code) => panic!("a write on the full disk answered {code}: {r}"),
        }
    }
    eprintln!(
        "on the full disk: {} refused as STORAGE_FULL, {} refusals in all, {} writes acknowledged in all so far",
        out.refused_full.len(),
        refusals,
        out.acknowledged.len()
    );
    // Reads still work on a full disk.
    let head = s.gql(Some(&token), "{ headPosition }", json!({})).await;
    assert!(head.get("errors").is_none() || pg.is_some(), "a read on the full disk: {head}");

    disk.free();
    if let Some(pg) = pg {
        // PostgreSQL may have given up recovering while the disk was full.
        tokio::time::sleep(Duration::from_secs(2)).await;
        if !pg.is_up().await {
            eprintln!("PostgreSQL stopped on the full disk; starting it again");
            pg.run("resume").await;
        }
    }
    // agentlog goes on by itself.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        n += 1;
        let (_, r) = create_task(s, &token, n).await;
        if r.get("errors").is_none() {
            out.acknowledged.push(n);
            break;
        }
        assert!(Instant::now() < deadline, "writes did not succeed again after space was freed: {r}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for _ in 0..10 {
        n += 1;
        let (_, r) = create_task(s, &token, n).await;
        assert!(r.get("errors").is_none(), "after space was freed: {r}");
        out.acknowledged.push(n);
    }
    out
}

/// Every acknowledged task is in the log, no refused-as-full one is, and the log and the read
/// models check out.
async fn check_outcomes(db: &Db, out: &Outcomes) {
    let events = read_log(db).await;
    check_log(&events);
    let created: std::collections::HashSet<String> = events
        .iter()
        .filter(|e| e.event_type == "task.created")
        .filter_map(|e| e.payload["taskId"].as_str().map(str::to_string))
        .collect();
    for n in &out.acknowledged {
        assert!(created.contains(&format!("task-{n}")), "acknowledged task-{n} is not in the log");
    }
    for n in &out.refused_full {
        assert!(!created.contains(&format!("task-{n}")), "task-{n} was refused as out of space but is in the log");
    }
    verify_read_models(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_disk_full() {
    let Some(disk) = SmallDisk::mount("sqlite_disk_full", 8) else { return };
    let db = Db::Shared(format!("sqlite:{}", disk.path().join("log.db").display()));
    let s = Server::start(db).await;
    let out = writes_on_a_full_disk(&s, &disk, None).await;
    let db = s.stop();
    check_outcomes(&db, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_disk_full() {
    let Some(disk) = SmallDisk::mount("postgres_disk_full", 160) else { return };
    let Some(pg) = PrivatePostgres::start_under("postgres_disk_full", disk.path()) else { return };
    let s = Server::start(Db::Shared(pg.url.clone())).await;
    let out = writes_on_a_full_disk(&s, &disk, Some(&pg)).await;
    let db = s.stop();
    check_outcomes(&db, &out).await;
    drop(pg);
}
