//! Start the real `agentlog` binary on a free port against a fresh database, and talk to it over
//! real HTTP and websockets.

#![allow(dead_code)]

use std::{
    collections::{HashMap, HashSet},
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use agentlog_domain::{envelope::RecordedEvent, events::decode_any};
use agentlog_eventlog::{
    EventFilter, StoreOptions, open_store,
    testing::{TempPostgres, TempSqlite, pg_url},
};
use agentlog_load::Record;
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections, checksum::table_checksums};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

/// Which database a test server uses.
pub enum Db {
    /// A throwaway SQLite file.
    Sqlite(TempSqlite),
    /// A throwaway PostgreSQL database.
    Postgres(TempPostgres),
    /// Another server's database (kept alive by that server).
    Shared(String),
}

impl Db {
    /// A fresh SQLite file.
    pub fn sqlite() -> Self {
        Db::Sqlite(TempSqlite::new())
    }

    /// A fresh PostgreSQL database, or None when PostgreSQL tests are skipped.
    pub async fn postgres(test: &str) -> Option<Self> {
        let url = pg_url(test)?;
        Some(Db::Postgres(TempPostgres::create(&url).await.expect("create test database")))
    }

    /// Its URL.
    pub fn url(&self) -> String {
        match self {
            Db::Sqlite(f) => f.url(),
            Db::Postgres(p) => p.url.clone(),
            Db::Shared(url) => url.clone(),
        }
    }
}

/// A running server.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:port`
    pub base: String,
    /// The admin token written on first start.
    pub admin_token: String,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// Keeps the database alive.
    pub db: Db,
    /// Extra `serve` flags (kept for a restart).
    args: Vec<String>,
    /// Every line the process wrote to stderr (its log), restarts included.
    log: Arc<Mutex<Vec<String>>>,
    client: reqwest::Client,
}

impl Server {
    /// Start `agentlog serve` on a free port.
    pub async fn start(db: Db) -> Self {
        let data_dir = std::env::temp_dir().join(format!("agentlog-api-test-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&data_dir).expect("data dir");
        Self::start_in(db, data_dir).await
    }

    /// Start on an existing data directory (a restart).
    pub async fn start_in(db: Db, data_dir: PathBuf) -> Self {
        Self::start_at(db, data_dir, "127.0.0.1:0").await
    }

    /// Start on `bind` (`host:port`; port 0 picks a free one).
    pub async fn start_at(db: Db, data_dir: PathBuf, bind: &str) -> Self {
        Self::start_with_args(db, data_dir, bind, &[]).await
    }

    /// Start with extra `serve` flags (limits).
    pub async fn start_with(db: Db, args: &[&str]) -> Self {
        let data_dir = std::env::temp_dir().join(format!("agentlog-api-test-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&data_dir).expect("data dir");
        Self::start_with_args(db, data_dir, "127.0.0.1:0", args).await
    }

    async fn start_with_args(db: Db, data_dir: PathBuf, bind: &str, args: &[&str]) -> Self {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (child, addr) = spawn_server(&db.url(), &data_dir, bind, &args, &log);
        let admin_token = std::fs::read_to_string(data_dir.join("agentlog-admin-token"))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        Self {
            child,
            base: format!("http://{addr}"),
            admin_token,
            data_dir,
            db,
            args,
            log,
            client: reqwest::Client::new(),
        }
    }

    /// The lines of the server's log that contain `needle`.
    pub fn logged(&self, needle: &str) -> Vec<String> {
        self.log.lock().unwrap().iter().filter(|l| l.contains(needle)).cloned().collect()
    }

    /// The server process's id (to read its memory from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, then start again on the same database, data directory and address, as a
    /// supervisor restarting a crashed server would (clients keep their URL).
    pub async fn restart(&mut self) {
        self.kill();
        let bind = self.base.trim_start_matches("http://").to_string();
        let (url, dir, at, args) = (self.db.url(), self.data_dir.clone(), bind.clone(), self.args.clone());
        let log = Arc::clone(&self.log);
        // Off the runtime's threads: waiting for the server blocks, and the load runs meanwhile.
        let (child, addr) = tokio::task::spawn_blocking(move || spawn_server(&url, &dir, &at, &args, &log))
            .await
            .expect("restart the server");
        assert_eq!(addr, bind, "restarted on another address");
        self.child = child;
    }

    /// A second server on this server's database, with its own data directory.
    pub async fn sibling(&self) -> Server {
        self.sibling_with(&[]).await
    }

    /// A second server on this server's database, with extra `serve` flags. It writes no admin
    /// token file (the database has one), so it holds this server's.
    pub async fn sibling_with(&self, args: &[&str]) -> Server {
        let mut other = Server::start_with(Db::Shared(self.db.url()), args).await;
        if other.admin_token.is_empty() {
            other.admin_token = self.admin_token.clone();
        }
        other
    }

    /// Poll `query` until `done` holds for its data (at most 30 s); answers the last data.
    pub async fn eventually(&self, token: &str, query: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.eventually_for(token, query, Duration::from_secs(30), done).await
    }

    /// [`Self::eventually`] with another time limit.
    pub async fn eventually_for(
        &self,
        token: &str,
        query: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = std::time::Instant::now() + within;
        loop {
            let data = self.data(Some(token), query, json!({})).await;
            if done(&data) || std::time::Instant::now() > deadline {
                return data;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// POST a GraphQL request with an optional bearer token.
    pub async fn gql(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        let mut req =
            self.client.post(format!("{}/graphql", self.base)).json(&json!({"query": query, "variables": variables}));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request").json().await.expect("json response")
    }

    /// POST raw bytes to /graphql and return (status, body).
    pub async fn raw(&self, token: Option<&str>, body: Vec<u8>, content_type: &str) -> (u16, String) {
        // A connection of its own: the server may close it after refusing the body, and a pooled
        // connection closed that way would fail the next, unrelated request.
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
        let mut req = client.post(format!("{}/graphql", self.base)).header("content-type", content_type).body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.expect("request");
        (resp.status().as_u16(), resp.text().await.unwrap_or_default())
    }

    /// The raw body of `query`'s answer (status 200): the text, before any client parses the
    /// numbers in it.
    pub async fn text(&self, token: &str, query: &str) -> String {
        let body = serde_json::to_vec(&json!({"query": query})).expect("request");
        let (status, text) = self.raw(Some(token), body, "application/json").await;
        assert_eq!(status, 200, "{text}");
        text
    }

    /// GET a path.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        (resp.status().as_u16(), resp.text().await.unwrap_or_default())
    }

    /// GET `/metrics` as an admin (the only callers besides the `--metrics-token` secret).
    pub async fn metrics_text(&self) -> (u16, String) {
        let resp = self
            .client
            .get(format!("{}/metrics", self.base))
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .expect("request");
        (resp.status().as_u16(), resp.text().await.unwrap_or_default())
    }

    /// A sample from `/metrics`, by its name and labels as printed (0 when absent).
    pub async fn metric(&self, sample: &str) -> u64 {
        let (_, body) = self.metrics_text().await;
        body.lines()
            .find_map(|l| l.strip_prefix(sample).and_then(|v| v.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// A data field, panicking with the errors if the request failed.
    pub async fn data(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        let r = self.gql(token, query, variables).await;
        assert!(r.get("errors").is_none(), "unexpected errors: {r}");
        r["data"].clone()
    }

    /// Create a user token through the admin mutation.
    pub async fn user_token(&self, user: &str) -> String {
        let d = self
            .data(
                Some(&self.admin_token),
                "mutation($u: String!) { createToken(userId: $u) { secret } }",
                json!({"u": user}),
            )
            .await;
        d["createToken"]["secret"].as_str().expect("token").to_string()
    }

    /// Claim `operation` as `worker` (300 s lease); the lease token its reports present.
    pub async fn claim(&self, token: &str, operation: &str, worker: &str) -> String {
        let d = self
            .data(
                Some(token),
                "mutation($id: String!, $w: String!) { claimOperation(id: $id, workerId: $w) { lease { token } } }",
                json!({"id": operation, "w": worker}),
            )
            .await;
        d["claimOperation"]["lease"]["token"].as_str().expect("lease token").to_string()
    }

    /// Stop with SIGTERM and wait.
    pub fn stop(mut self) -> Db {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        std::mem::replace(&mut self.db, Db::sqlite())
    }

    /// Send SIGTERM and return at once (the server drains meanwhile).
    pub fn terminate(&self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
    }

    /// The process's exit status once it has exited, waiting at most `within`.
    pub fn exit_status(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Start again on the same database, data directory and flags after this process exited
    /// (on a new port).
    pub async fn start_again(mut self) -> Server {
        let db = std::mem::replace(&mut self.db, Db::sqlite());
        let args: Vec<String> = std::mem::take(&mut self.args);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start_with_args(db, self.data_dir.clone(), "127.0.0.1:0", &refs).await
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn `agentlog serve` and wait for the address it bound. A fixed port can still be held
/// for a moment by the process just killed: then the server exits at once and we try again.
fn spawn_server(
    db_url: &str,
    data_dir: &std::path::Path,
    bind: &str,
    extra: &[String],
    log: &Arc<Mutex<Vec<String>>>,
) -> (Child, String) {
    for _ in 0..20 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(["serve", "--bind", bind, "--database", db_url, "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env("AGENTLOG_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agentlog");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::clone(log);
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(i) = line.find("addr=") {
                    let addr: String = line[i + 5..].chars().take_while(|c| !c.is_whitespace()).collect();
                    let _ = tx.send(addr);
                    sent = true;
                }
                if std::env::var("AGENTLOG_TEST_SERVER_LOG").is_ok() {
                    eprintln!("[server] {line}");
                }
                log.lock().unwrap().push(line);
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => return (child, addr),
            // The server exited before binding (its stderr closed).
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("the server did not print its address: {e}"),
        }
    }
    panic!("the server kept exiting before binding {bind}")
}

/// `/metrics`' count of commands decided on a cached state and appended.
pub const ON_CACHE: &str = "agentlog_cached_state_commands_total{outcome=\"appended\"}";
/// `/metrics`' count of commands tried on a cached state and run again on the stream.
pub const RELOADED: &str = "agentlog_cached_state_commands_total{outcome=\"reloaded\"}";

/// The first error code of a response.
pub fn error_code(response: &Value) -> Option<String> {
    response["errors"][0]["extensions"]["code"].as_str().map(str::to_string)
}

/// A websocket GraphQL client (graphql-transport-ws or graphql-ws).
pub struct Ws {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    legacy: bool,
}

impl Ws {
    /// Connect and initialise with a bearer token.
    pub async fn connect(server: &Server, token: &str, protocol: &str) -> Self {
        let url = server.base.replace("http://", "ws://") + "/graphql";
        let mut request = url.into_client_request().expect("request");
        request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_str(protocol).expect("header"));
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("websocket connect");
        let init = json!({"type": "connection_init", "payload": {"authorization": format!("Bearer {token}")}});
        socket.send(Message::text(init.to_string())).await.expect("init");
        let legacy = protocol == "graphql-ws";
        let mut ws = Self { socket, legacy };
        let ack = ws.next_json().await.expect("ack");
        assert_eq!(ack["type"], "connection_ack", "{ack}");
        ws
    }

    /// Start a subscription.
    pub async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
        let kind = if self.legacy { "start" } else { "subscribe" };
        let msg = json!({"id": id, "type": kind, "payload": {"query": query, "variables": variables}});
        self.socket.send(Message::text(msg.to_string())).await.expect("subscribe");
    }

    /// The next JSON message (skipping pings / keep-alives).
    pub async fn next_json(&mut self) -> Option<Value> {
        serde_json::from_str(&self.next_text().await?).ok()
    }

    /// The next text message as sent (skipping pings / keep-alives).
    pub async fn next_text(&mut self) -> Option<String> {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.socket.next()).await.ok()??.ok()?;
            match msg {
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).ok()?;
                    match v["type"].as_str() {
                        Some("ping") => {
                            let _ = self.socket.send(Message::text(json!({"type": "pong"}).to_string())).await;
                        }
                        Some("ka") | Some("pong") => {}
                        _ => return Some(t.as_str().to_string()),
                    }
                }
                Message::Close(_) => return None,
                _ => {}
            }
        }
    }

    /// Send one JSON message.
    pub async fn send_json(&mut self, message: Value) {
        self.socket.send(Message::text(message.to_string())).await.expect("send");
    }

    /// The payload of the next data message ("next" / "data").
    pub async fn next_data(&mut self) -> Value {
        let v = self.next_json().await.expect("a message");
        let expected = if self.legacy { "data" } else { "next" };
        assert_eq!(v["type"], expected, "{v}");
        v["payload"].clone()
    }

    /// Wait for the server to close the connection; answers its close code (None when it
    /// ended without one or did not end within 20 s).
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.socket.next()).await.ok()??.ok()?;
            if let Message::Close(frame) = msg {
                return frame.map(|f| u16::from(f.code));
            }
        }
    }

    /// Drop the connection abruptly.
    pub async fn cut(mut self) {
        let _ = self.socket.close(None).await;
    }
}

/// Run `$f(db)` on SQLite and on PostgreSQL (`<name>_sqlite`, `<name>_postgres`); the
/// PostgreSQL one is skipped (and says so) without `AGENTLOG_TEST_PG_URL`, and fails in CI.
macro_rules! both {
    ($($f:ident as $name:ident),*) => { paste::paste! { $(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn [<$name _sqlite>]() { $f(Db::sqlite()).await }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn [<$name _postgres>]() {
            if let Some(db) = Db::postgres(stringify!([<$name _postgres>])).await { $f(db).await }
        }
    )* } };
}

// ---- Checks on the log and the read models, read from the database directly (not the API).

/// Every event of the log at `db`, in position order, read through the store.
pub async fn read_log(db: &Db) -> Vec<RecordedEvent> {
    let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
    let mut events: Vec<RecordedEvent> = Vec::new();
    loop {
        let after = events.last().map_or(0, |e| e.position);
        let page = store.read_all(after, &EventFilter::default(), 5_000).await.expect("read the log");
        if page.is_empty() {
            break;
        }
        events.extend(page);
    }
    // The same counts straight from the table: nothing the store's reader could hide.
    let raw = ReadDb::from(store.database());
    let row = raw.fetch("SELECT COUNT(*), COUNT(DISTINCT event_id) FROM events", &[]).await.expect("count events");
    assert_eq!(row[0].i64(0), Some(events.len() as i64), "the store read every row of the events table");
    assert_eq!(row[0].i64(1), Some(events.len() as i64), "an event id appears twice in the events table");
    let dup = raw
        .fetch(
            "SELECT stream_id, stream_version FROM events GROUP BY stream_id, stream_version HAVING COUNT(*) > 1",
            &[],
        )
        .await
        .expect("duplicate versions");
    assert!(dup.is_empty(), "stream versions stored twice: {dup:?}");
    store.close().await;
    events
}

/// The log's invariants, as `agentlog-replay verify` checks them: positions strictly
/// increasing, no event id twice, each stream's versions 1, 2, 3 … without a gap, every payload
/// decodes at its schema version, every chain link names an earlier event.
pub fn check_log(events: &[RecordedEvent]) {
    let mut ids = HashSet::new();
    let mut versions: HashMap<&str, i64> = HashMap::new();
    let mut last = 0;
    for e in events {
        assert!(e.position > last, "position {} after {last}", e.position);
        last = e.position;
        assert!(ids.insert(e.event_id), "event id {} twice (position {})", e.event_id, e.position);
        let v = versions.entry(e.stream_id.as_str()).or_default();
        assert_eq!(e.stream_version, *v + 1, "{} version {} follows {v}", e.stream_id, e.stream_version);
        *v = e.stream_version;
        if let Err(err) = decode_any(&e.event_type, e.schema_version, &e.payload) {
            panic!("{} v{} at {} does not decode: {err}", e.event_type, e.schema_version, e.position);
        }
        let chain = e.chain();
        assert!(
            chain.root_source_id == e.event_id || ids.contains(&chain.root_source_id),
            "root of {} unknown",
            e.position
        );
        assert!(chain.parent_node_id.is_none_or(|p| ids.contains(&p)), "parent of {} unknown", e.position);
    }
}

/// The mixed load's workers did their half: claims, steps and completions on the operations
/// its users started (with the operator's token, naming each operation's owner) were
/// acknowledged, so the checks after a load cover the run's own path too.
pub fn check_workers_worked(report: &agentlog_load::Report) {
    for op in ["claimOperation", "reportStep", "completeOperation"] {
        let acked = report.operations.get(op).map_or(0, |o| o.acknowledged);
        assert!(acked > 0, "no {op} acknowledged: the workers did nothing\n{report}");
    }
}

/// Every acknowledged mutation's effect is in the log: the event at its answered position is in
/// one of its streams (a position of 0 — nothing appended, a repeated request — needs the
/// stream to exist), and a message it appended is there.
pub fn check_acknowledged(records: &[Record], events: &[RecordedEvent]) {
    let at: HashMap<i64, &RecordedEvent> = events.iter().map(|e| (e.position, e)).collect();
    let streams: HashSet<&str> = events.iter().map(|e| e.stream_id.as_str()).collect();
    let messages: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.event_type == "conversation.message_appended")
        .filter_map(|e| Some((e.stream_id.as_str(), e.payload["messageId"].as_str()?)))
        .collect();
    // A `*` stands for any text (a user id the load does not know).
    let names = |pattern: &str, stream: &str| match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            stream.len() >= prefix.len() + suffix.len() && stream.starts_with(prefix) && stream.ends_with(suffix)
        }
        None => stream == pattern,
    };
    for r in records {
        if r.position > 0 {
            let e = at.get(&r.position).unwrap_or_else(|| panic!("acknowledged but not in the log: {r:?}"));
            assert!(
                r.streams.iter().any(|s| names(s.as_str(), e.stream_id.as_str())),
                "{r:?}: position {} is in {}",
                r.position,
                e.stream_id
            );
        } else {
            assert!(
                r.streams.iter().any(|s| streams.iter().any(|st| names(s.as_str(), st))),
                "acknowledged, no stream: {r:?}"
            );
        }
        if r.op == "appendMessage" {
            let id = r.ids["messageId"].as_str().unwrap_or_default();
            let logged = |s: &String| messages.iter().any(|(stream, m)| *m == id && names(s.as_str(), stream));
            assert!(r.streams.iter().any(logged), "message not in the log: {r:?}");
        }
    }
}

/// Every read model, brought to the log's head, equals a rebuild from position 0 into a fresh
/// database of the same backend, table by table — the read-model half of `agentlog-replay
/// verify` (whose crate has no library target to call from here). Bringing the live read models
/// to the head first is what the server does at its next start; the killed one could not.
pub async fn verify_read_models(db: &Db) {
    let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
    let live = ReadDb::from(store.database());
    let catch_up = ProjectionRunner::new(Arc::clone(&store), live.clone(), all_projections(), RunnerOptions::default());
    let head = catch_up.catch_up().await.expect("catch the read models up");
    assert!(catch_up.status().iter().all(|s| s.failed.is_none()), "{:?}", catch_up.status());
    let scratch = if db.url().starts_with("postgres") {
        Db::postgres("verify_read_models").await.expect("a PostgreSQL scratch database")
    } else {
        Db::sqlite()
    };
    let scratch_store = open_store(&scratch.url(), StoreOptions::default()).await.expect("open the scratch database");
    let fresh = ReadDb::from(scratch_store.database());
    let rebuild = ProjectionRunner::new(Arc::clone(&store), fresh.clone(), all_projections(), RunnerOptions::default());
    assert_eq!(rebuild.catch_up().await.expect("rebuild"), head);
    let tables: Vec<&str> = all_projections().iter().flat_map(|p| p.tables().iter().copied()).collect();
    let got = table_checksums(&live, &tables).await.expect("live checksums");
    let want = table_checksums(&fresh, &tables).await.expect("rebuilt checksums");
    let differ: Vec<String> = want
        .iter()
        .filter(|(t, c)| got.get(*t) != Some(*c))
        .map(|(t, c)| format!("{t}: live {:?}, rebuilt {c}", got.get(t).map(ToString::to_string)))
        .collect();
    assert!(differ.is_empty(), "read models differ from a rebuild:\n{}", differ.join("\n"));
    scratch_store.close().await;
    store.close().await;
}
