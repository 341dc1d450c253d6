//! The operator console: its pages and files are served by the binary itself (nothing from a
//! CDN, no Node at run time), GraphiQL too; what the console needs from the API (`viewer`,
//! runs by model); and the console in a real browser (`console/test/browser.mjs`: Debian's
//! Chromium driven by playwright-core, every non-loopback request blocked). Without
//! `console/node_modules` or Chromium the browser part says SKIPPED, and fails under `CI=true`.

use std::{path::PathBuf, process::Command};

use serde_json::json;

use crate::support::{Db, Server, Ws, error_code};

const DIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../console/dist");

async fn pages_and_files_are_served_locally(db: Db) {
    let s = Server::start(db).await;
    let client = reqwest::Client::new();
    let index = std::fs::read_to_string(format!("{DIST}/index.html")).unwrap();
    // Every console route answers the page (the page picks what to show), with a policy that
    // lets it load only from this server.
    for path in [
        "/",
        "/runs",
        "/runs/some-run",
        "/tasks",
        "/tasks/t-1",
        "/conversations",
        "/conversations/c-1",
        "/inbox",
        "/schedules",
        "/analytics",
        "/log",
    ] {
        let r = client.get(format!("{}{path}", s.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let csp = r.headers().get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        assert!(csp.contains("default-src 'self'") && csp.contains("connect-src 'self'"), "{path}: {csp}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
        assert_eq!(r.text().await.unwrap(), index, "{path}");
    }
    // GraphiQL for a browser's GET of /graphql, its scripts and styles from /console/.
    let r = client.get(format!("{}/graphql", s.base)).header("accept", "text/html").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("content-security-policy"));
    let graphiql = r.text().await.unwrap();
    assert!(graphiql.contains("/console/graphiql.min.js"), "{graphiql}");
    // Every file a page names is served, with its media type, and names nothing elsewhere.
    for page in [&index, &graphiql] {
        assert!(!page.contains("https://") && !page.contains("http://"), "a page names another host: {page}");
        for name in page.split("/console/").skip(1).map(|rest| rest.split('"').next().unwrap_or_default()) {
            let r = client.get(format!("{}/console/{name}", s.base)).send().await.unwrap();
            assert_eq!(r.status(), 200, "{name}");
            let want = if name.ends_with(".css") { "text/css" } else { "text/javascript" };
            assert!(r.headers()["content-type"].to_str().unwrap().starts_with(want), "{name}");
            assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{name}");
            let body = r.bytes().await.unwrap();
            assert_eq!(body, std::fs::read(format!("{DIST}/{name}")).unwrap(), "{name} is the built file");
        }
    }
    // The rest keeps its meaning: unknown files and paths are 404, the probes and GraphQL answer.
    for path in ["/console/nope.js", "/console/../Cargo.toml", "/nowhere"] {
        assert_eq!(client.get(format!("{}{path}", s.base)).send().await.unwrap().status(), 404, "{path}");
    }
    assert_eq!(s.get("/healthz").await, (200, "ok".into()));
    assert_eq!(s.data(Some(&s.admin_token), "{ __typename }", json!({})).await["__typename"], "Query");
    s.stop();
}

/// `viewer` names the token's user (how the console checks a token at sign-in); no token is
/// UNAUTHENTICATED.
async fn viewer_names_the_caller(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let d = s.data(Some(&alice), "{ viewer { userId admin } }", json!({})).await;
    assert_eq!(d["viewer"], json!({"userId": "alice", "admin": false}));
    let d = s.data(Some(&s.admin_token), "{ viewer { admin } }", json!({})).await;
    assert_eq!(d["viewer"]["admin"], true);
    for token in [None, Some("made-up")] {
        let r = s.gql(token, "{ viewer { userId } }", json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{token:?}: {r}");
    }
    s.stop();
}

/// `operations(filter: {model})` lists the runs on that model, the model used (an override
/// included).
async fn runs_are_filtered_by_model(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    for (id, model) in [("plain", Some("model-b")), ("other", Some("model-under-test")), ("default", None)] {
        let mut input = json!({"operationId": id, "kind": "TASK", "agentId": "inbox"});
        if let Some(m) = model {
            input["model"] = json!(m);
        }
        s.data(Some(&alice), start, json!({"i": input})).await;
    }
    let list = "query($m: String) { operations(filter: {model: $m}) { nodes { id model } } }";
    let ids = |d: &serde_json::Value| -> Vec<String> {
        d["operations"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap().to_string()).collect()
    };
    for (model, want) in [("model-under-test", vec!["other"]), ("model-b", vec!["plain"]), ("no-such-model", vec![])] {
        let d = s.data(Some(&alice), list, json!({"m": model})).await;
        assert_eq!(ids(&d), want, "{model}: {d}");
    }
    let d = s.data(Some(&alice), list, json!({"m": null})).await;
    assert_eq!(ids(&d).len(), 3, "no model: every run: {d}");
    s.stop();
}

/// `events(settled: true)` delivers an event once the read models include it, so a query sent
/// on receiving it reads its effects (the console's live pages read again on each event). The
/// mutation is in flight while the event arrives: its own wait for the read models does not
/// help the subscriber.
async fn settled_events_come_after_the_read_models(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let head = s.data(Some(&alice), "{ headPosition }", json!({})).await["headPosition"].clone();
    let mut ws = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    let live = "subscription($p: Int) { events(fromPosition: $p, settled: true,                 filter: {eventTypes: [\"operation.created\"]}) { position payload } }";
    ws.subscribe("1", live, json!({"p": head})).await;
    let client = reqwest::Client::new();
    for i in 0..20 {
        let id = format!("settled-{i}");
        let body = json!({
            "query": "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }",
            "variables": {"i": {"operationId": id, "kind": "TASK", "agentId": "inbox"}},
        });
        let start = client.post(format!("{}/graphql", s.base)).bearer_auth(&alice).json(&body).send();
        let start = tokio::spawn(start);
        let event = ws.next_data().await;
        assert_eq!(event["data"]["events"]["payload"]["operationId"], id.as_str(), "{event}");
        let d = s.data(Some(&alice), "{ operations(first: 1) { nodes { id } } }", json!({})).await;
        assert_eq!(d["operations"]["nodes"][0]["id"], id.as_str(), "the list already has run {i}: {d}");
        assert_eq!(start.await.unwrap().unwrap().status(), 200);
    }
    s.stop();
}

/// `console/` with its packages installed, and Chromium; else why not.
fn browser_parts() -> Result<(PathBuf, String), String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../console");
    if !dir.join("node_modules/playwright-core").is_dir() {
        return Err("console/node_modules is missing (run `npm ci --prefix console`)".into());
    }
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        return Err(format!("no Chromium at {chromium} (apt-get install chromium)"));
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok((dir, chromium)),
        _ => Err("no `node` on PATH".into()),
    }
}

async fn console_in_a_browser(db: Db) {
    let (dir, chromium) = match browser_parts() {
        Ok(parts) => parts,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("the browser test cannot run in CI: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED console/test/browser.mjs: {why}");
            return;
        }
    };
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let mut node = Command::new("node");
    node.arg("test/browser.mjs").args([&s.base, &s.admin_token, &alice, &bob]).env("CHROMIUM", chromium);
    let out = tokio::task::spawn_blocking(move || node.current_dir(&dir).output()).await.unwrap().expect("run node");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "console/test/browser.mjs failed:\n{text}");
    eprintln!("{text}");
    s.stop();
}

both!(
    pages_and_files_are_served_locally as pages_and_files_are_served_locally,
    viewer_names_the_caller as viewer_names_the_caller,
    runs_are_filtered_by_model as runs_are_filtered_by_model,
    settled_events_come_after_the_read_models as settled_events_come_after_the_read_models,
    console_in_a_browser as console_in_a_browser
);
