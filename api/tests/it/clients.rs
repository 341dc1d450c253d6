//! GraphQL over HTTP as standard clients speak it: the spec's own compliance suite (graphql-http's
//! `serverAudits`, 0 errors and 0 warnings) and urql, Apollo Client and graphql-request with their
//! defaults, run under Node from `clients/` (pinned by its `package-lock.json`; `.ci/run` installs
//! it with `npm ci`). Without Node or `clients/node_modules` the Node part says SKIPPED, and fails
//! under `CI=true`. The rules themselves (media types, status codes, GET) are also checked here
//! in Rust, so they hold wherever Node is missing.

use std::{path::PathBuf, process::Command};

use serde_json::{Value, json};

use crate::support::{Db, Server};

/// `clients/`, when its packages are installed and `node` runs; else why not.
fn node_clients() -> Result<PathBuf, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients");
    if !dir.join("node_modules").is_dir() {
        return Err("clients/node_modules is missing (run `npm ci --prefix clients`)".into());
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(dir),
        _ => Err("no `node` on PATH".into()),
    }
}

/// Run `script` of `clients/` against the server; panics with its output when it fails.
fn run_node(script: &str, s: &Server) {
    let dir = match node_clients() {
        Ok(dir) => dir,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("{script} cannot run in CI: {why}"),
        Err(why) => {
            eprintln!("SKIPPED clients/{script}: {why}");
            return;
        }
    };
    let out = Command::new("node")
        .arg(script)
        .arg(format!("{}/graphql", s.base))
        .arg(&s.admin_token)
        .current_dir(&dir)
        .output()
        .expect("run node");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "clients/{script} failed:\n{text}");
    eprintln!("{text}");
}

async fn spec_audits_and_standard_clients(db: Db) {
    let s = Server::start(db).await;
    run_node("audit.mjs", &s);
    run_node("clients.mjs", &s);
    for snippet in SNIPPETS {
        run_node(&format!("snippets/{snippet}"), &s);
    }
    s.stop();
}

/// The README's client snippets (`clients/snippets/`), run here as they are printed there.
const SNIPPETS: [&str; 4] = ["apollo.mjs", "urql.mjs", "graphql-ws.mjs", "worker.mjs"];

#[test]
fn the_readme_shows_the_snippets_that_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    for snippet in SNIPPETS {
        let code = std::fs::read_to_string(root.join("clients/snippets").join(snippet)).expect("snippet");
        assert!(
            readme.contains(&format!("```js\n{code}```")),
            "README.md must show clients/snippets/{snippet} verbatim in a ```js block"
        );
    }
}

/// The rules graphql-http audits, checked without Node.
async fn graphql_over_http_rules(db: Db) {
    let s = Server::start(db).await;
    let client = reqwest::Client::new();
    let url = format!("{}/graphql", s.base);
    let post = |accept: Option<&'static str>, body: Value| {
        let mut r = client.post(&url).bearer_auth(&s.admin_token).json(&body);
        if let Some(a) = accept {
            r = r.header("accept", a);
        }
        r.send()
    };
    let content_type =
        |r: &reqwest::Response| r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();

    // The media type follows Accept; none or */* is application/json.
    for (accept, want) in [
        (None, "application/json"),
        (Some("*/*"), "application/json"),
        (Some("application/json"), "application/json"),
        (Some("application/graphql-response+json"), "application/graphql-response+json"),
    ] {
        let r = post(accept, json!({"query": "{ __typename }"})).await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(content_type(&r).starts_with(want), "{accept:?} → {}", content_type(&r));
    }

    // A request error: 400 without `data` for graphql-response+json, 200 for application/json.
    for query in ["{", "{ noSuchField }", "query Q($id: ID!) { task(id: $id) { taskId } }"] {
        let r = post(Some("application/graphql-response+json"), json!({"query": query})).await.unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let body: Value = r.json().await.unwrap();
        assert!(body.get("data").is_none(), "{body}");
        assert_eq!(body["errors"][0]["extensions"]["code"], "VALIDATION", "{body}");
        let r = post(Some("application/json"), json!({"query": query})).await.unwrap();
        assert_eq!(r.status(), 200, "{query}");
    }
    // An execution error keeps 200 and `data`.
    let r = post(Some("application/graphql-response+json"), json!({"query": "{ task(id: \"none\") { taskId } }"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert!(body.get("data").is_some(), "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "NOT_FOUND");

    // A syntax error is one line with its place, and keeps its code.
    let r = post(None, json!({"query": "{ task(id: }"})).await.unwrap();
    let body: Value = r.json().await.unwrap();
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(!message.contains('\n') && message.starts_with("syntax error at line 1, column"), "{message}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "VALIDATION");

    // A POST must say it is JSON; no `query` is a 400.
    let (status, _) = s.raw(Some(&s.admin_token), b"{\"query\":\"{ __typename }\"}".to_vec(), "text/plain").await;
    assert_eq!(status, 415);
    let r = client.post(&url).bearer_auth(&s.admin_token).body("{\"query\":\"{ __typename }\"}").send().await.unwrap();
    assert_eq!(r.status(), 415, "no content type");
    let r = post(None, json!({"qeury": "{ __typename }"})).await.unwrap();
    assert_eq!(r.status(), 400);

    // GET executes queries, refuses mutations with 405, and serves GraphiQL only to a browser.
    let get = |query: &str, accept: &'static str| {
        client.get(&url).bearer_auth(&s.admin_token).header("accept", accept).query(&[("query", query)]).send()
    };
    let r = get("query Q { headPosition __typename }", "application/json").await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["data"]["__typename"], "Query", "{body}");
    let r = client
        .get(&url)
        .bearer_auth(&s.admin_token)
        .query(&[("query", "query($id: String!) { task(id: $id) { taskId } }"), ("variables", "{\"id\":\"none\"}")])
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "NOT_FOUND", "the variables were read: {body}");
    let mutation =
        "mutation { createTask(input: {taskId: \"by-get\", identifier: \"G-1\", instruction: \"x\"}) { position } }";
    let head_before = s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await["headPosition"].clone();
    let r = get(mutation, "application/json").await.unwrap();
    assert_eq!(r.status(), 405);
    assert!(r.headers().get("allow").is_some_and(|v| v.to_str().unwrap().contains("POST")));
    let named = mutation.replacen("mutation {", "mutation Named {", 1);
    assert_eq!(get(&named, "application/graphql-response+json").await.unwrap().status(), 405, "a named mutation");
    let head_after = s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await["headPosition"].clone();
    assert_eq!(head_before, head_after, "a mutation over GET wrote nothing");
    let r = client.get(&url).query(&[("query", "{ __typename }"), ("variables", "[1]")]).send().await.unwrap();
    assert_eq!(r.status(), 400, "variables must be an object");
    let r = client.get(&url).header("accept", "text/html,application/xhtml+xml,*/*;q=0.8").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("graphiql"));
    let r = client.get(&url).header("accept", "application/json").send().await.unwrap();
    assert_eq!(r.status(), 400, "a GET without a query that is not a browser's");
    s.stop();
}

both!(
    spec_audits_and_standard_clients as spec_audits_and_standard_clients,
    graphql_over_http_rules as graphql_over_http_rules
);
