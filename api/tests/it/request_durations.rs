//! `/metrics`' request-duration histogram through the real server: every GraphQL request over
//! HTTP (POST or GET) is counted under its operation type and root field, a request that never
//! ran under `none`, and no text a client sends becomes a label. A request over
//! `--log-requests-over-ms` is logged with the same labels.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code};

const NAME: &str = "agentlog_graphql_request_duration_seconds";
const START: &str = "mutation($input: StartOperationInput!) { startOperation(input: $input) { position } }";

fn start_input(id: &str) -> Value {
    json!({"input": {"operationId": id, "kind": "TASK", "agentId": "inbox", "model": "m1", "provider": "p1"}})
}

/// The series of `kind` and `field`: its count, its `+Inf` bucket and its sum.
async fn series(s: &Server, kind: &str, field: &str) -> (u64, u64, f64) {
    let labels = format!("operation_type=\"{kind}\",field=\"{field}\"");
    let count = s.metric(&format!("{NAME}_count{{{labels}}}")).await;
    let inf = s.metric(&format!("{NAME}_bucket{{{labels},le=\"+Inf\"}}")).await;
    // A sum is a float, which `Server::metric` does not read.
    let sum_line = format!("{NAME}_sum{{{labels}}} ");
    let (_, body) = s.metrics_text().await;
    let sum = body.lines().find_map(|l| l.strip_prefix(&sum_line)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0);
    (count, inf, sum)
}

async fn each_request_is_timed_under_its_root_field(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;

    for id in ["d1", "d2", "d3"] {
        s.data(Some(&alice), START, start_input(id)).await;
    }
    let (count, inf, sum) = series(&s, "mutation", "startOperation").await;
    assert_eq!((count, inf), (3, 3), "three mutations, each in a bucket");
    assert!(sum > 0.0, "their durations add up: {sum}");

    // Aliases and __typename do not change the label; a GET is counted as a POST is.
    s.data(Some(&alice), "{ __typename a: headPosition b: headPosition }", json!({})).await;
    let get = reqwest::Client::new()
        .get(format!("{}/graphql?query=%7B%20headPosition%20%7D", s.base))
        .bearer_auth(&alice)
        .send()
        .await
        .expect("request");
    assert_eq!(get.status(), 200);
    assert_eq!(series(&s, "query", "headPosition").await.0, 2);
    s.data(Some(&alice), "{ headPosition operation(id: \"d1\") { id } }", json!({})).await;
    assert_eq!(series(&s, "query", "several").await.0, 1);

    // Requests that never ran — invalid, unauthenticated, unparsable — are counted under none,
    // and a field the schema does not have never becomes a label.
    let before = series(&s, "none", "none").await.0;
    let invalid = s.gql(Some(&alice), "mutation { noSuchField_x7 }", json!({})).await;
    assert!(invalid.get("errors").is_some(), "{invalid}");
    let anonymous = s.gql(None, "{ headPosition }", json!({})).await;
    assert_eq!(error_code(&anonymous).as_deref(), Some("UNAUTHENTICATED"), "{anonymous}");
    let unparsable = s.gql(Some(&alice), "{ headPosition", json!({})).await;
    assert!(unparsable.get("errors").is_some(), "{unparsable}");
    assert_eq!(series(&s, "none", "none").await.0 - before, 3);
    let (_, body) = s.metrics_text().await;
    assert!(!body.contains("noSuchField_x7"), "a client's text became a label");
    assert_eq!(series(&s, "query", "headPosition").await.0, 2, "the refused query is not the schema's field's");
    s.stop();
}

both!(each_request_is_timed_under_its_root_field as request_durations_by_root_field);

/// The server's `slow request` lines, once there are at least `n` (at most 10 s).
async fn slow_lines(s: &Server, n: usize) -> Vec<String> {
    for _ in 0..100 {
        let lines = s.logged("slow request");
        if lines.len() >= n {
            return lines;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    s.logged("slow request")
}

async fn slow_requests_are_logged_over_the_threshold(db: Db) {
    // 0: every request is slow enough to be logged.
    let s = Server::start_with(db, &["--log-requests-over-ms", "0"]).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), START, start_input("s1")).await;
    let invalid = s.gql(Some(&alice), "mutation { noSuchField_x7 }", json!({})).await;
    assert!(invalid.get("errors").is_some(), "{invalid}");
    let lines = slow_lines(&s, 3).await;
    let started: Vec<&String> =
        lines.iter().filter(|l| l.contains(r#"operation_type="mutation" field="startOperation""#)).collect();
    assert_eq!(started.len(), 1, "{lines:?}");
    assert!(started[0].contains("WARN") && started[0].contains("millis="), "{}", started[0]);
    // The refused request is logged under none; what the client sent is not.
    assert!(lines.iter().any(|l| l.contains(r#"operation_type="none" field="none""#)), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("noSuchField_x7")), "{lines:?}");
    let db = s.stop();

    // -1: none is (the same database: alice's token stands).
    let s = Server::start_with(db, &["--log-requests-over-ms", "-1"]).await;
    s.data(Some(&alice), START, start_input("s2")).await;
    s.data(Some(&alice), "{ headPosition }", json!({})).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(s.logged("slow request").is_empty(), "{:?}", s.logged("slow request"));
    assert!(!s.logged("addr=").is_empty(), "the log is read");
    s.stop();
}

both!(slow_requests_are_logged_over_the_threshold as slow_requests_logged);
