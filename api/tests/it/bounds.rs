//! Bounds one request (or one anonymous client) cannot pass: the database's statement timeout,
//! anonymous websockets, the answer-size bound on subscriptions, and introspection's depth.
//! RELIABILITY.md, "Hostile requests", lists them with the other probes.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{Connection, Executor, PgConnection, Row};

use crate::support::{Db, Server, error_code};

const START: &str =
    "mutation($i: StartOperationInput!, $r: String) { startOperation(input: $i, requestId: $r) { position } }";

/// The longest any statement of this database has been waiting on a lock, other than `me`'s.
async fn longest_lock_wait(me: &mut PgConnection) -> f64 {
    let row = me
        .fetch_one(
            "SELECT COALESCE(MAX(EXTRACT(EPOCH FROM now() - query_start)), 0)::float8 FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' \
             AND wait_event_type = 'Lock'",
        )
        .await
        .expect("pg_stat_activity");
    row.get(0)
}

/// PostgreSQL cancels a statement past `--statement-timeout-ms`: a read blocked in the database
/// answers LIMIT at that bound (not at the query timeout), no statement of the server keeps
/// waiting (its connection is free again), and a mutation whose append is held answers LIMIT,
/// writes nothing, and succeeds when sent again with the same requestId.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_cancels_a_statement_past_the_statement_timeout() {
    let Some(db) = Db::postgres("the_database_cancels_a_statement_past_the_statement_timeout").await else { return };
    let url = db.url();
    let s = Server::start_with(db, &["--statement-timeout-ms", "500", "--query-timeout-ms", "60000"]).await;
    let alice = s.user_token("alice").await;
    let op = |id: &str| json!({"operationId": id, "kind": "TASK", "agentId": "inbox"});
    s.data(Some(&alice), START, json!({"i": op("before"), "r": null})).await;

    // Another client holds the operations table: the server's read waits on its lock.
    let mut holder = PgConnection::connect(&url).await.expect("connect");
    holder.execute("BEGIN; LOCK TABLE operations IN ACCESS EXCLUSIVE MODE").await.expect("lock");
    let mut watcher = PgConnection::connect(&url).await.expect("connect");
    let t = Instant::now();
    let read = "{ operations(first: 5) { edges { node { id } } } }";
    let r = tokio::time::timeout(Duration::from_secs(10), s.gql(Some(&alice), read, json!({})))
        .await
        .expect("the blocked read answers within 10 s, long before the 60 s query timeout");
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    assert!(t.elapsed() < Duration::from_secs(5), "answered after {:?}", t.elapsed());
    // Whatever the server retries meanwhile (projections, tailer), none of its statements
    // waits on the lock for much longer than the statement timeout.
    for _ in 0..10 {
        let waited = longest_lock_wait(&mut watcher).await;
        assert!(waited < 2.0, "a server statement has waited {waited} s on the lock");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    holder.execute("ROLLBACK").await.expect("unlock");

    // The log held: the append is cancelled, answered LIMIT, and nothing of it is written.
    holder.execute("BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE").await.expect("lock the log");
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        s.gql(Some(&alice), START, json!({"i": op("held"), "r": "req-held"})),
    )
    .await
    .expect("the held append answers");
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    holder.execute("ROLLBACK").await.expect("unlock");
    let written: i64 =
        watcher.fetch_one("SELECT COUNT(*) FROM events WHERE stream_id LIKE '%held%'").await.expect("count").get(0);
    assert_eq!(written, 0, "a cancelled append wrote events");
    s.data(Some(&alice), START, json!({"i": op("held"), "r": "req-held"})).await;
    let r = s.data(Some(&alice), read, json!({})).await;
    assert_eq!(r["operations"]["edges"].as_array().map(Vec::len), Some(2), "{r}");
    s.stop();
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// A websocket upgrade to `s` from the local address `from` (any 127.x.y.z is this machine),
/// with `token` in the upgrade request or none: the socket, or the HTTP status of the refusal.
async fn upgrade_from(s: &Server, from: &str, token: Option<&str>) -> Result<Socket, u16> {
    use tokio_tungstenite::tungstenite::{Error, client::IntoClientRequest, http::HeaderValue};
    let addr: std::net::SocketAddr = s.base.trim_start_matches("http://").parse().expect("server address");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(format!("{from}:0").parse().expect("source address")).expect("bind the source address");
    let stream = socket.connect(addr).await.expect("tcp connect");
    let mut request = format!("ws://{addr}/graphql").into_client_request().expect("request");
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    if let Some(t) = token {
        request.headers_mut().insert("Authorization", HeaderValue::from_str(&format!("Bearer {t}")).expect("header"));
    }
    match tokio_tungstenite::client_async(request, stream).await {
        Ok((ws, _)) => Ok(ws),
        Err(Error::Http(response)) => Err(response.status().as_u16()),
        Err(e) => panic!("websocket upgrade failed: {e}"),
    }
}

/// Send `connection_init` (no payload) and subscribe to events from 0: the first answer.
async fn init_and_subscribe(ws: &mut Socket) -> serde_json::Value {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    ws.send(Message::text(json!({"type": "connection_init"}).to_string())).await.expect("init");
    let sub = json!({"id": "1", "type": "subscribe", "payload": {"query": "subscription { events(fromPosition: 0) { position } }"}});
    let mut acked = false;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an answer")
            .expect("open")
            .expect("ok");
        let Message::Text(t) = msg else { continue };
        let v: serde_json::Value = serde_json::from_str(t.as_str()).expect("json");
        if v["type"] == "connection_ack" && !acked {
            acked = true;
            ws.send(Message::text(sub.to_string())).await.expect("subscribe");
        } else if v["type"] != "ping" && v["type"] != "pong" {
            return v;
        }
    }
}

/// The close code the server sends `ws` (within 10 s), None without one.
async fn close_code(ws: &mut Socket) -> Option<u16> {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await.ok()?? {
            Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

/// Websockets that carry no token are capped per address and in all, and closed with 4408
/// when their `connection_init` does not come in time: an anonymous flood does not stop a
/// user's subscribe (from another address, or with the token in the upgrade request).
async fn anonymous_websockets_are_capped(db: Db) {
    let s = Server::start_with(
        db,
        &[
            "--max-anonymous-connections-per-address",
            "5",
            "--max-anonymous-connections",
            "8",
            "--connection-init-timeout-ms",
            "2000",
        ],
    )
    .await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"a\") { position } }", json!({})).await;

    // One address: five, then refused.
    let mut flood = Vec::new();
    for _ in 0..5 {
        flood.push(upgrade_from(&s, "127.0.0.2", None).await.expect("an anonymous place"));
    }
    assert_eq!(upgrade_from(&s, "127.0.0.2", None).await.err(), Some(429), "a sixth from one address");
    // Alice, from her address, with the token in connection_init as browsers send it.
    let mut mine = crate::support::Ws::connect(&s, &alice, "graphql-transport-ws").await;
    mine.subscribe("a1", "subscription { events(fromPosition: 0) { position } }", json!({})).await;
    assert!(mine.next_data().await["data"]["events"]["position"].as_i64().is_some());

    // More addresses fill the server's anonymous places (alice's socket above is hers now).
    for _ in 0..3 {
        flood.push(upgrade_from(&s, "127.0.0.3", None).await.expect("an anonymous place"));
    }
    assert_eq!(upgrade_from(&s, "127.0.0.4", None).await.err(), Some(429), "past the server's anonymous cap");
    // A token in the upgrade request takes no anonymous place.
    let mut with_token = upgrade_from(&s, "127.0.0.4", Some(&alice)).await.expect("a user's upgrade");
    let first = init_and_subscribe(&mut with_token).await;
    assert!(first["payload"]["data"]["events"]["position"].as_i64().is_some(), "{first}");
    drop(with_token);

    // The flood never sent connection_init: closed with 4408 after 2 s, their places free.
    for ws in &mut flood {
        assert_eq!(close_code(ws).await, Some(4408));
    }
    let mut again = upgrade_from(&s, "127.0.0.2", None).await.expect("a place freed by the timeout");
    // Still anonymous at connection_init: closed as unauthorised, not served.
    use futures_util::SinkExt;
    again
        .send(tokio_tungstenite::tungstenite::Message::text(json!({"type": "connection_init"}).to_string()))
        .await
        .expect("init");
    assert_eq!(close_code(&mut again).await, Some(4401));
    s.stop();
}

/// A subscription's result larger than `--max-response-bytes` comes as that subscription's
/// `next` with a LIMIT error (on both websocket protocols); the socket and the subscription go
/// on, and the next result arrives whole.
async fn subscription_results_are_bounded_in_size(db: Db) {
    let s = Server::start_with(db, &["--max-response-bytes", "4096"]).await;
    let alice = s.user_token("alice").await;
    let op = |id: &str, instruction: String| json!({"i": {"operationId": id, "kind": "TASK", "agentId": "inbox", "instruction": instruction}, "r": null});
    for protocol in ["graphql-transport-ws", "graphql-ws"] {
        let mut ws = crate::support::Ws::connect(&s, &alice, protocol).await;
        let head = s.data(Some(&alice), "{ headPosition }", json!({})).await["headPosition"].as_i64().expect("head");
        ws.subscribe(
            "big",
            "subscription($p: Int) { events(fromPosition: $p) { position eventType payload } }",
            json!({"p": head}),
        )
        .await;
        let big = format!("{protocol}-big");
        s.data(Some(&alice), START, op(&big, "x".repeat(6_000))).await;
        s.data(Some(&alice), START, op(&format!("{protocol}-small"), "small".into())).await;
        let mut refused = None;
        let mut after = None;
        while after.is_none() {
            let payload = ws.next_data().await;
            if error_code(&payload).is_some() {
                refused = Some(payload);
            } else if refused.is_some() && payload["data"]["events"]["payload"]["operationId"].is_string() {
                after = Some(payload);
            }
        }
        let refused = refused.expect("a refused result");
        assert_eq!(error_code(&refused).as_deref(), Some("LIMIT"), "{refused}");
        assert!(refused["errors"][0]["message"].as_str().is_some_and(|m| m.contains("4096")), "{refused}");
        let after = after.expect("the next result");
        assert_eq!(after["data"]["events"]["payload"]["operationId"], json!(format!("{protocol}-small")), "{after}");
    }
    s.stop();
}

/// graphql-js 16's `getIntrospectionQuery()` with its default options, as rendered (the
/// template of `src/utilities/getIntrospectionQuery.ts` in graphql/graphql-js, v16, with
/// `descriptions` and without the optional fields): what GraphiQL and code generators send.
const GRAPHQL_JS_16_INTROSPECTION: &str = r#"
    query IntrospectionQuery {
      __schema {
        
        queryType { name }
        mutationType { name }
        subscriptionType { name }
        types {
          ...FullType
        }
        directives {
          name
          description
          
          locations
          args {
            ...InputValue
          }
        }
      }
    }

    fragment FullType on __Type {
      kind
      name
      description
      
      fields(includeDeprecated: true) {
        name
        description
        args {
          ...InputValue
        }
        type {
          ...TypeRef
        }
        isDeprecated
        deprecationReason
      }
      inputFields {
        ...InputValue
      }
      interfaces {
        ...TypeRef
      }
      enumValues(includeDeprecated: true) {
        name
        description
        isDeprecated
        deprecationReason
      }
      possibleTypes {
        ...TypeRef
      }
    }

    fragment InputValue on __InputValue {
      name
      description
      type { ...TypeRef }
      defaultValue
      
      
    }

    fragment TypeRef on __Type {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
                ofType {
                  kind
                  name
                  ofType {
                    kind
                    name
                  }
                }
              }
            }
          }
        }
      }
    }
  "#;

/// The full introspection query (13 deep) is answered with and without a token, although data
/// queries stop at 12; introspection deeper than its own allowance (16) is refused with LIMIT.
async fn the_full_introspection_query_is_answered(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    for token in [None, Some(alice.as_str())] {
        let r = s.gql(token, GRAPHQL_JS_16_INTROSPECTION, json!({})).await;
        assert!(r.get("errors").is_none(), "{r}");
        let types = r["data"]["__schema"]["types"].as_array().expect("types");
        assert!(types.iter().any(|t| t["name"] == "Operation"), "{r}");
        assert_eq!(r["data"]["__schema"]["queryType"]["name"], "Query");
    }
    // Past the allowance: twenty levels of type references.
    let mut deep = String::from("kind name");
    for _ in 0..20 {
        deep = format!("kind name ofType {{ {deep} }}");
    }
    let q = format!("{{ __schema {{ types {{ fields {{ type {{ {deep} }} }} }} }} }}");
    for token in [None, Some(alice.as_str())] {
        let r = s.gql(token, &q, json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("introspection")), "{r}");
    }
    // A data query 14 deep is still refused.
    let r = s
        .gql(
            Some(&alice),
            "{ operation(id: \"x\") { children(first: 1) { edges { node { children(first: 1) { edges { node { children(first: 1) { edges { node { children(first: 1) { edges { node { id } } } } } } } } } } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    s.stop();
}

both!(
    the_full_introspection_query_is_answered as the_full_introspection_query_is_answered,
    anonymous_websockets_are_capped as anonymous_websockets_are_capped,
    subscription_results_are_bounded_in_size as subscription_results_are_bounded_in_size
);
