//! The `graphql_request` fuzz target's entry point, shared with the regression test that
//! feeds it every input in `fuzz/server/regressions/graphql_request/`
//! (`api/tests/it/fuzz_regressions.rs`, run by `cargo test`).
//!
//! Arbitrary bytes as an HTTP request to the server's GraphQL endpoint, through the same
//! router `agentlog serve` runs (body limit, token lookup, parse, depth and complexity limits,
//! validation, execution against a real SQLite log).
//!
//! What must hold for every input:
//! - no panic, no hang (libFuzzer's `-timeout`), no unbounded memory (`-rss_limit_mb`);
//! - never a 5xx: bad input is the caller's fault and answered as such;
//! - every answer is JSON: a GraphQL response or a refusal with a message;
//! - a request answered without data (refused, or only errors) wrote nothing: the log's head
//!   did not move.
//!
//! The first byte chooses how the rest is sent: as the raw POST body, as the `query` of a JSON
//! request, as the `variables` of a fixed mutation, or as a GET query string; and with an
//! admin's token, a user's or none. (A GET runs a query, and refuses a mutation with 405.)

use std::sync::OnceLock;

use agentlog_api::{
    auth::Role,
    graphql::build_schema,
    http::{Http, router},
    server::open_app,
    state::{ApiLimits, AppState, Settings},
};
use axum::{
    Router,
    body::{Body, to_bytes},
    http::{Method, Request, StatusCode, header},
};
use tower::ServiceExt;

struct Server {
    runtime: tokio::runtime::Runtime,
    router: Router,
    state: AppState,
    admin: String,
    user: String,
}

/// One server per fuzzing process, on a SQLite file of its own.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let path = std::env::temp_dir().join(format!("agentlog-fuzz-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let (state, admin, user) = runtime.block_on(async {
            let state =
                open_app(&url, Settings::default(), ApiLimits::default()).await.expect("opening the fuzz server's log");
            let admin = state.tokens.create("fuzz-admin", Role::Admin, "fuzz").await.expect("admin token").secret;
            let user = state.tokens.create("fuzz-user", Role::User, "fuzz").await.expect("user token").secret;
            (state, admin, user)
        });
        let router = router(Http::new(state.clone(), build_schema(state.clone())));
        Server { runtime, router, state, admin, user }
    })
}

/// A mutation whose variables the fuzzer writes (types, nesting, size, encoding).
const MUTATION: &str = "mutation($input: JSON!, $ownerId: String, $requestId: String) \
    { createTask(input: $input, ownerId: $ownerId, requestId: $requestId) { position task { id } } }";

fn request(data: &[u8], s: &Server) -> Option<Request<Body>> {
    let (&mode, rest) = data.split_first()?;
    let token = match mode >> 4 & 3 {
        0 => None,
        1 => Some(&s.user),
        _ => Some(&s.admin),
    };
    let builder = |method: Method, uri: String| {
        let b = Request::builder().method(method).uri(uri).header(header::CONTENT_TYPE, "application/json");
        match token {
            Some(t) => b.header(header::AUTHORIZATION, format!("Bearer {t}")),
            None => b,
        }
    };
    let text = String::from_utf8_lossy(rest);
    let built = match mode & 3 {
        0 => builder(Method::POST, "/graphql".into()).body(Body::from(rest.to_vec())),
        1 => {
            builder(Method::POST, "/graphql".into()).body(Body::from(serde_json::json!({ "query": text }).to_string()))
        }
        2 => {
            // Not necessarily an object: wrong types at the top level are part of the test.
            let variables = serde_json::from_slice::<serde_json::Value>(rest).ok()?;
            let body = serde_json::json!({ "query": MUTATION, "variables": variables });
            builder(Method::POST, "/graphql".into()).body(Body::from(body.to_string()))
        }
        _ => {
            let query: String = url_encode(rest);
            builder(Method::GET, format!("/graphql?query={query}")).body(Body::empty())
        }
    };
    built.ok()
}

/// Percent-encode every byte that is not unreserved, so any input is a valid URI.
fn url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Send `data` as one request and check what must hold (panics when it does not).
pub fn check(data: &[u8]) {
    let s = server();
    let Some(request) = request(data, s) else {
        return;
    };
    let is_get = request.method() == Method::GET;
    s.runtime.block_on(async {
        let head_before = s.state.store.head_position().await.expect("reading the head");
        let response = s.router.clone().oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        assert!(!status.is_server_error(), "a server error for client input: {status}");
        let html = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/html"));
        let body = to_bytes(response.into_body(), 64 << 20).await.expect("reading the answer");
        // A GET executes queries only (a mutation is a 405): it never writes.
        if is_get {
            assert_eq!(head_before, s.state.store.head_position().await.expect("reading the head"), "a GET wrote");
        }
        // GraphiQL is only for a browser asking for text/html; this target never asks.
        assert!(!html, "an HTML answer ({status}) to a request that did not ask for text/html");
        let answer: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("an answer that is not JSON ({status}): {e}: {body:?}"));
        let wrote_nothing_expected = status != StatusCode::OK || answer.get("data").is_none_or(|d| d.is_null());
        if wrote_nothing_expected {
            // Read-your-writes: a mutation that answered has committed; one that did not must
            // not have appended anything.
            let head_after = s.state.store.head_position().await.expect("reading the head");
            assert_eq!(head_before, head_after, "a refused request moved the log's head: {answer}");
        }
    });
}
