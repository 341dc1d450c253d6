//! The server's own log cannot be written: its stderr is on a full disk (`/dev/full`, every
//! write ENOSPC), as when the machine's disk filled under the soak. Logging must never take the
//! server down: `tracing` reporting a failed write with `eprintln!` panicked whichever task had
//! logged — at start the main task (exit 101), under load the event log's writer, after which
//! every mutation answered INTERNAL ("the event log is closed") until a restart. Now the line is
//! dropped and the server serves: started with debug logging into `/dev/full`, it answers
//! mutations and exits 0 on SIGTERM.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::support::Db;

async fn serves_with_its_log_on_a_full_disk(db: Db) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let dir = std::env::temp_dir().join(format!("agentlog-full-log-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("data dir");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--database", &db.url(), "--data-dir"])
        .arg(&dir)
        .env("AGENTLOG_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(full)
        .spawn()
        .expect("spawn agentlog");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the server exited with its log unwritable: {status:?}");
        }
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let token = std::fs::read_to_string(dir.join("agentlog-admin-token")).expect("the admin token").trim().to_string();
    let gql = |query: &'static str, variables: Value| {
        let request = client
            .post(format!("{base}/graphql"))
            .bearer_auth(&token)
            .json(&json!({"query": query, "variables": variables}));
        async move { request.send().await.expect("an answer").json::<Value>().await.expect("JSON") }
    };
    let d = gql("mutation { createConversation(topicId: \"t\", title: \"chat\") { position } }", json!({})).await;
    assert!(d["errors"].is_null(), "{d}");
    for i in 0..20 {
        let m = json!({"messageId": format!("m{i}"), "role": "user", "content": "x"});
        let d = gql("mutation($m: JSON!) { appendMessage(topicId: \"t\", message: $m) { position } }", json!({"m": m}))
            .await;
        assert!(d["errors"].is_null(), "message {i}: {d}");
    }
    let d = gql("{ conversation(topicId: \"t\") { flatList } }", json!({})).await;
    assert_eq!(d["data"]["conversation"]["flatList"].as_array().map(Vec::len), Some(20), "{d}");
    assert!(matches!(child.try_wait(), Ok(None)), "the server is still running");
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = tokio::task::spawn_blocking(move || child.wait()).await.expect("wait").expect("exit status");
    assert!(status.success(), "exit status {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

both!(serves_with_its_log_on_a_full_disk as serves_with_its_log_on_a_full_disk);
