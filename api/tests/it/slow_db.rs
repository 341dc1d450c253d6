//! PostgreSQL that has too few connections, or answers slowly. Each test runs a private
//! PostgreSQL server (`scripts/pg-test-server.sh` on a free port, durable) and the mixed load of
//! `agentlog-load`:
//! - `max_connections` lower than agentlog's connections (writer, listeners and a read pool of
//!   up to 8): a request that cannot get a connection waits for one (the pool's acquire timeout,
//!   5 s) and is then refused with UNAVAILABLE;
//! - every byte agentlog sends delayed by 200 ms (a proxy on loopback in the test): every
//!   statement takes a round trip of at least 200 ms, so mutations slow down and queue.
//!
//! In both: no answer is INTERNAL, `/readyz` answers (and says why when it is not ready), and
//! afterwards every acknowledged mutation is in the log, nothing twice, the read models equal a
//! rebuild. PostgreSQL only; runs wherever the PostgreSQL tests run.

use std::time::{Duration, Instant};

use agentlog_load::{Config, Report};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::mpsc,
};

use crate::{
    db_faults::PrivatePostgres,
    faults::{TempRecord, check_nothing_lost_in},
    support::{Db, Server},
};

/// No operation answered INTERNAL, and at least `min` mutations were acknowledged.
fn no_internal_errors(report: &Report, min: u64) {
    for (op, r) in &report.operations {
        assert!(!r.errors.contains_key("INTERNAL"), "{op} answered INTERNAL: {r:?}");
    }
    assert!(report.acknowledged >= min, "the load did something: {report}");
}

fn load_config(server: &Server, record: &TempRecord, secs: u64, clients: usize) -> Config {
    let mut config = Config::new(server.base.clone(), server.admin_token.clone());
    config.clients = clients;
    config.subscribers = 1;
    config.duration = Some(Duration::from_secs(secs));
    config.record = Some(record.0.clone());
    config.request_timeout = Duration::from_secs(60);
    config.drain_timeout = Duration::from_secs(60);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_with_fewer_connections_than_agentlog_wants() {
    let Some(pg) = PrivatePostgres::start_with(
        "postgres_with_fewer_connections_than_agentlog_wants",
        &std::env::temp_dir(),
        &[("PG_MAX_CONNECTIONS", "6")],
    ) else {
        return;
    };
    let server = Server::start(Db::Shared(pg.url.clone())).await;
    let record = TempRecord::create();
    let load = tokio::spawn(agentlog_load::run(load_config(&server, &record, 8, 8)));
    // `/readyz` answers within its bound meanwhile, whatever it says.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let asked = Instant::now();
        let (status, body) = server.get("/readyz").await;
        assert!(asked.elapsed() < Duration::from_secs(4), "/readyz answered after {:?}", asked.elapsed());
        assert!(status == 200 || body.starts_with("not ready: "), "{status} {body}");
    }
    let report = load.await.expect("the load task").expect("the load run");
    eprintln!("{report}");
    no_internal_errors(&report, 10);
    // The checks read the whole log: directly, not through the proxy.
    server.stop();
    check_nothing_lost_in(&Db::Shared(pg.url.clone()), &record, &report).await;
    drop(pg);
}

/// A TCP proxy on loopback to `upstream` that holds every chunk the client sends for `delay`
/// before passing it on (in order, without limiting throughput); the answers pass at once.
async fn delaying_proxy(upstream: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
    let port = listener.local_addr().expect("proxy address").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else { return };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
                let inbound = tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = client_read.read(&mut buf).await {
                        if n == 0 || tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                });
                let forward = tokio::spawn(async move {
                    while let Some((due, bytes)) = rx.recv().await {
                        tokio::time::sleep_until(due.into()).await;
                        if server_write.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    let _ = server_write.shutdown().await;
                });
                let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                inbound.abort();
                forward.abort();
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_200ms_away() {
    let Some(pg) = PrivatePostgres::start("postgres_200ms_away") else { return };
    // Migrate directly (dozens of statements), then serve through the proxy.
    let first = Server::start(Db::Shared(pg.url.clone())).await;
    let token = first.admin_token.clone();
    first.stop();
    let port = delaying_proxy(pg.port, Duration::from_millis(200)).await;
    let url = pg.url.replace(&format!(":{}/", pg.port), &format!(":{port}/"));
    let mut server = Server::start(Db::Shared(url)).await;
    server.admin_token = token;
    let (status, body) = server.get("/readyz").await;
    assert!(status == 200 || body.starts_with("not ready: "), "{status} {body}");
    let record = TempRecord::create();
    let report = agentlog_load::run(load_config(&server, &record, 15, 4)).await.expect("the load run");
    eprintln!("{report}");
    // Every statement is a 200 ms round trip and a mutation is a dozen of them (token, stream,
    // append, then its read models): a few per client get through, slowly, none fails.
    no_internal_errors(&report, 2);
    // A mutation whose read models lag past the read-your-writes bound still answers what it
    // wrote (its payload's node is read only when asked for, and then says it is behind).
    for (op, r) in &report.operations {
        assert!(!r.errors.contains_key("NOT_FOUND"), "{op} answered NOT_FOUND for its own write: {r:?}");
    }
    let slowest = report.operations.values().map(|r| r.p50_ms).fold(0.0, f64::max);
    assert!(slowest >= 200.0, "the proxy delayed the statements: {report}");
    // The checks read the whole log: directly, not through the proxy.
    server.stop();
    check_nothing_lost_in(&Db::Shared(pg.url.clone()), &record, &report).await;
    drop(pg);
}
