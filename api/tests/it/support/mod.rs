//! Start the real `agentlog` binary on a free port against a fresh database, and talk to it over
//! real HTTP and websockets.

#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use agentlog_eventlog::testing::{TempPostgres, TempSqlite, pg_url};
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(["serve", "--bind", "127.0.0.1:0", "--database", &db.url(), "--data-dir"])
            .arg(&data_dir)
            .env("AGENTLOG_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agentlog");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
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
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(60)).expect("server printed its address");
        let admin_token = std::fs::read_to_string(data_dir.join("agentlog-admin-token"))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        Self { child, base: format!("http://{addr}"), admin_token, data_dir, db, client: reqwest::Client::new() }
    }

    /// A second server on this server's database, with its own data directory.
    pub async fn sibling(&self) -> Server {
        Server::start(Db::Shared(self.db.url())).await
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

    /// GET a path.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let resp = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        (resp.status().as_u16(), resp.text().await.unwrap_or_default())
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
            .data(Some(&self.admin_token), "mutation($u: String!) { createToken(userId: $u) }", json!({"u": user}))
            .await;
        d["createToken"].as_str().expect("token").to_string()
    }

    /// Stop with SIGTERM and wait.
    pub fn stop(mut self) -> Db {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        std::mem::replace(&mut self.db, Db::sqlite())
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
                        _ => return Some(v),
                    }
                }
                Message::Close(_) => return None,
                _ => {}
            }
        }
    }

    /// The payload of the next data message ("next" / "data").
    pub async fn next_data(&mut self) -> Value {
        let v = self.next_json().await.expect("a message");
        let expected = if self.legacy { "data" } else { "next" };
        assert_eq!(v["type"], expected, "{v}");
        v["payload"].clone()
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
