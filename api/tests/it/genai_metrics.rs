//! `/metrics` carries the OpenTelemetry GenAI histograms under their Prometheus names, derived
//! from the log once per run per instance: a second instance on the same database measures the
//! same runs once, a restart does not measure history again, and the server's own series keep
//! their names.

use std::time::Duration;

use serde_json::json;

use crate::support::{Db, Server};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const STEP: &str = "mutation($id: String!, $lt: String!, $u: UsageInput) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, usage: $u) { position } }";
const DONE: &str =
    "mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: \"ok\") { position } }";
const FAIL: &str = "mutation($id: String!, $lt: String!) { failOperation(id: $id, leaseToken: $lt, message: \"no\", errorType: \"provider_error\") { position } }";

/// The value of the series `name{labels}` (labels as printed, in order), if present.
fn series(metrics: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{{{labels}}} ");
    metrics.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.parse().ok())
}

const WRITER: &str = "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"gpt-4o\",gen_ai_agent_id=\"writer\"";
const RUN: &str = "gen_ai_operation_name=\"invoke_agent\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"gpt-4o\",gen_ai_agent_id=\"writer\"";

/// Scrape until `done` holds (at most 10 s); answers the last scrape.
async fn scrape_until(s: &Server, done: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        let (status, body) = s.metrics_text().await;
        assert_eq!(status, 200);
        if done(&body) {
            return body;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("metrics never got there:\n{last}");
}

/// Alice runs `id` on the writer: two steps, then done (or failed).
async fn run(s: &Server, t: &str, id: &str, fail: bool) {
    s.data(Some(t), START, json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": "writer"}})).await;
    let lt = s.claim(t, id, "w1").await;
    s.data(Some(t), STEP, json!({"id": id, "lt": lt, "u": {"inputTokens": 100, "outputTokens": 20}})).await;
    s.data(Some(t), STEP, json!({"id": id, "lt": lt, "u": {"inputTokens": 50, "outputTokens": 5}})).await;
    s.data(Some(t), if fail { FAIL } else { DONE }, json!({"id": id, "lt": lt})).await;
}

async fn genai_metrics_are_derived_from_the_log_once_per_instance(db: Db) {
    let mut s = Server::start(db).await;
    let other = s.sibling().await;
    let t = s.user_token("alice").await;
    let writer = json!({"agentId": "writer", "config": {"slug": "writer", "title": "Writer", "model": "gpt-4o", "provider": "openai"}});
    s.data(Some(&t), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": writer})).await;
    run(&s, &t, "p1", false).await;
    run(&s, &t, "p2", true).await;

    let failed = format!("{RUN},error_type=\"provider_error\"");
    for instance in [&s, &other] {
        let m = scrape_until(instance, |m| {
            series(m, "gen_ai_client_operation_duration_seconds_count", &failed).is_some()
                && series(m, "gen_ai_client_operation_duration_seconds_count", RUN).is_some()
        })
        .await;
        let input = format!("{WRITER},gen_ai_token_type=\"input\"");
        let output = format!("{WRITER},gen_ai_token_type=\"output\"");
        // Two runs of two steps each: four chat operations, each counted once.
        assert_eq!(series(&m, "gen_ai_client_token_usage_count", &input), Some(4.0), "{m}");
        assert_eq!(series(&m, "gen_ai_client_token_usage_sum", &input), Some(300.0), "{m}");
        assert_eq!(series(&m, "gen_ai_client_token_usage_sum", &output), Some(50.0), "{m}");
        assert_eq!(series(&m, "gen_ai_client_token_usage_bucket", &format!("{input},le=\"64\"")), Some(2.0));
        assert_eq!(series(&m, "gen_ai_client_token_usage_bucket", &format!("{input},le=\"256\"")), Some(4.0));
        assert_eq!(series(&m, "gen_ai_client_token_usage_bucket", &format!("{output},le=\"4\"")), Some(0.0));
        assert_eq!(series(&m, "gen_ai_client_token_usage_bucket", &format!("{input},le=\"+Inf\"")), Some(4.0));
        assert_eq!(series(&m, "gen_ai_client_operation_duration_seconds_count", RUN), Some(1.0), "{m}");
        assert_eq!(series(&m, "gen_ai_client_operation_duration_seconds_count", &failed), Some(1.0), "{m}");
        assert_eq!(series(&m, "gen_ai_client_operation_duration_seconds_count", WRITER), Some(4.0), "{m}");
        assert!(m.contains("# TYPE gen_ai_client_token_usage histogram"), "{m}");
        assert!(m.contains(&format!("semantic conventions {}", agentlog_otel::conventions::VERSION)), "{m}");
        assert!(m.contains("# TYPE gen_ai_client_operation_duration_seconds histogram"), "{m}");
        // The server's own series keep their names.
        for own in ["agentlog_http_requests_total", "agentlog_log_head_position", "agentlog_projection_lag_events"] {
            assert!(m.lines().any(|l| l.starts_with(own)), "{own} missing:\n{m}");
        }
    }

    // A restart does not measure the history again; the next run is measured once.
    s.restart().await;
    let fresh = s.metrics_text().await.1;
    assert_eq!(series(&fresh, "gen_ai_client_operation_duration_seconds_count", RUN), None, "{fresh}");
    run(&s, &t, "p3", false).await;
    let m = scrape_until(&s, |m| series(m, "gen_ai_client_operation_duration_seconds_count", RUN).is_some()).await;
    assert_eq!(series(&m, "gen_ai_client_operation_duration_seconds_count", RUN), Some(1.0), "{m}");
    assert_eq!(
        series(&m, "gen_ai_client_token_usage_count", &format!("{WRITER},gen_ai_token_type=\"input\"")),
        Some(2.0)
    );
    // The other instance, running all along, has measured three runs' worth.
    let m =
        scrape_until(&other, |m| series(m, "gen_ai_client_operation_duration_seconds_count", RUN) == Some(2.0)).await;
    assert_eq!(
        series(&m, "gen_ai_client_token_usage_count", &format!("{WRITER},gen_ai_token_type=\"input\"")),
        Some(6.0)
    );
    other.stop();
    s.stop();
}

/// Agent ids, models and error types come from users: past `--max-genai-series` label sets,
/// a run's measurements count in the overflow series, so a user cannot grow the server's
/// memory or a scrape without bound. With 2 sets per histogram, one agent's run (its `invoke_agent`
/// and `chat` durations, its input and output tokens) fills both; two more agents' runs go to
/// the overflow series, whole.
async fn genai_series_beyond_the_cap_overflow(db: Db) {
    let s = Server::start_with(db, &["--max-genai-series", "2"]).await;
    let t = s.user_token("alice").await;
    for (i, agent) in ["writer", "critic", "editor"].iter().enumerate() {
        let config = json!({"agentId": agent, "config": {"slug": agent, "title": agent, "model": "gpt-4o", "provider": "openai"}});
        s.data(Some(&t), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": config})).await;
        let id = format!("o{i}");
        s.data(Some(&t), START, json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": agent}})).await;
        let lt = s.claim(&t, &id, "w1").await;
        s.data(Some(&t), STEP, json!({"id": id, "lt": lt, "u": {"inputTokens": 100, "outputTokens": 20}})).await;
        s.data(Some(&t), STEP, json!({"id": id, "lt": lt, "u": {"inputTokens": 50, "outputTokens": 5}})).await;
        s.data(Some(&t), DONE, json!({"id": id, "lt": lt})).await;
    }
    let overflow = "otel_metric_overflow=\"true\"";
    // Each run: one `invoke_agent` and two `chat` durations; two steps' input and output tokens.
    let body = scrape_until(&s, |m| {
        series(m, "gen_ai_client_operation_duration_seconds_count", overflow) == Some(6.0)
            && series(m, "gen_ai_client_token_usage_count", overflow) == Some(4.0 * 2.0)
    })
    .await;
    assert_eq!(series(&body, "gen_ai_client_operation_duration_seconds_count", RUN), Some(1.0));
    assert_eq!(series(&body, "gen_ai_client_operation_duration_seconds_count", WRITER), Some(2.0));
    for agent in ["critic", "editor"] {
        assert!(!body.contains(&format!("gen_ai_agent_id=\"{agent}\"")), "{agent} has series of its own:\n{body}");
    }
    let kept = |name: &str| body.lines().filter(|l| l.starts_with(&format!("{name}_count{{"))).count();
    assert_eq!(kept("gen_ai_client_operation_duration_seconds"), 3, "{body}");
    assert_eq!(kept("gen_ai_client_token_usage"), 3, "{body}");
}

both!(
    genai_metrics_are_derived_from_the_log_once_per_instance as genai_metrics_once_per_instance,
    genai_series_beyond_the_cap_overflow as genai_series_beyond_the_cap_overflow
);
