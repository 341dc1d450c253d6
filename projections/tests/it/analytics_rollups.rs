//! The analytics rollups answer what aggregating every run per request would: over a generated
//! workload (several users, every end of a run), each report — an admin's, read from the rollups
//! summed over every owner, and each user's, read from the per-owner rollups — equals the same
//! report computed here from the per-run fact table `analytics_runs`.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use agentlog_eventlog::testing::TestLog;
use agentlog_projections::{
    ProjectionRunner, ReadDb, RunnerOptions,
    analytics::{
        AnalyticsBucket, AnalyticsDimension, AnalyticsProjection, AnalyticsQuery, AnalyticsReport, AnalyticsSummary,
        DurationHistogram, DurationSummary, Granularity, MAX_CELLS, query,
    },
};
use agentlog_workload::{Workload, WorkloadConfig};
use chrono::DateTime;

const HOUR: i64 = 3_600_000_000;
const DAY: i64 = 24 * HOUR;

/// One finished run, as `analytics_runs` keeps it.
#[derive(Debug, Clone)]
struct Fact {
    user_id: String,
    agent_id: String,
    model: String,
    provider: String,
    status: String,
    reason: String,
    finished_at: i64,
    duration_ms: Option<i64>,
    tokens: [Option<i64>; 4],
}

async fn facts(db: &ReadDb) -> Vec<Fact> {
    let rows = db
        .fetch(
            "SELECT user_id, agent_id, model, provider, status, completion_reason, finished_at, duration_ms, \
             input_tokens, output_tokens, total_tokens, cost_micros FROM analytics_runs WHERE finished_at IS NOT NULL",
            &[],
        )
        .await
        .unwrap();
    let text = |r: &agentlog_projections::Row, i: usize| r.str(i).unwrap_or_default().to_string();
    rows.iter()
        .map(|r| Fact {
            user_id: text(r, 0),
            agent_id: text(r, 1),
            model: text(r, 2),
            provider: text(r, 3),
            status: text(r, 4),
            reason: text(r, 5),
            finished_at: r.i64(6).unwrap(),
            duration_ms: r.i64(7),
            tokens: [r.i64(8), r.i64(9), r.i64(10), r.i64(11)],
        })
        .collect()
}

/// The summary of a set of runs, computed from the runs themselves.
fn summarize(runs: &[&Fact]) -> AnalyticsSummary {
    let mut tokens = [None; 4];
    let mut histogram = DurationHistogram::default();
    let mut reasons = BTreeMap::new();
    let durations: Vec<i64> = runs.iter().filter_map(|r| r.duration_ms).collect();
    for r in runs {
        for (sum, t) in tokens.iter_mut().zip(r.tokens) {
            *sum = match (*sum, t) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        *reasons.entry(r.reason.clone()).or_insert(0) += 1;
    }
    for d in &durations {
        histogram.record(u64::try_from(*d).unwrap());
    }
    let (min, max) = (durations.iter().copied().min(), durations.iter().copied().max());
    let pct = |q: f64| histogram.quantile(q).map(|v| i64::try_from(v).unwrap().clamp(min.unwrap(), max.unwrap()));
    let count = durations.len() as i64;
    AnalyticsSummary {
        runs: runs.len() as i64,
        input_tokens: tokens[0],
        output_tokens: tokens[1],
        total_tokens: tokens[2],
        cost_micros: tokens[3],
        duration: DurationSummary {
            count,
            mean_ms: (count > 0).then(|| durations.iter().sum::<i64>() as f64 / count as f64),
            min_ms: min,
            max_ms: max,
            p50_ms: pct(0.50),
            p95_ms: pct(0.95),
            p99_ms: pct(0.99),
        },
        completion_reasons: reasons,
    }
}

/// Bucket start, agent, its owner, model, provider, status.
type Key = (i64, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);

/// The report `q` asks for, aggregated from every matching run.
fn per_run(facts: &[Fact], owner: Option<&str>, q: &AnalyticsQuery) -> AnalyticsReport {
    let width = if q.granularity == Granularity::Day { DAY } else { HOUR };
    let by = |d| q.group_by.contains(&d);
    let matches = |f: &Fact| {
        let start = f.finished_at.div_euclid(width) * width;
        owner.is_none_or(|o| f.user_id == o)
            && q.from.is_none_or(|t| start >= t.timestamp_micros())
            && q.to.is_none_or(|t| start < t.timestamp_micros())
            && q.agent_id.as_ref().is_none_or(|a| &f.agent_id == a)
            && q.model.as_ref().is_none_or(|m| &f.model == m)
            && q.provider.as_ref().is_none_or(|p| &f.provider == p)
            && q.status.as_ref().is_none_or(|s| &f.status == s)
    };
    let chosen: Vec<&Fact> = facts.iter().filter(|f| matches(f)).collect();
    let mut groups: BTreeMap<Key, Vec<&Fact>> = BTreeMap::new();
    for f in &chosen {
        let key = (
            f.finished_at.div_euclid(width) * width,
            by(AnalyticsDimension::Agent).then(|| f.agent_id.clone()),
            by(AnalyticsDimension::Agent).then(|| f.user_id.clone()),
            by(AnalyticsDimension::Model).then(|| f.model.clone()),
            by(AnalyticsDimension::Provider).then(|| f.provider.clone()),
            by(AnalyticsDimension::Status).then(|| f.status.clone()),
        );
        groups.entry(key).or_default().push(f);
    }
    AnalyticsReport {
        buckets: groups
            .into_iter()
            .map(|((start, agent_id, user_id, model, provider, status), runs)| AnalyticsBucket {
                bucket_start: DateTime::from_timestamp_micros(start).unwrap(),
                agent_id,
                user_id,
                model,
                provider,
                status,
                summary: summarize(&runs),
            })
            .collect(),
        total: summarize(&chosen),
    }
}

fn queries(facts: &[Fact]) -> Vec<AnalyticsQuery> {
    use AnalyticsDimension::*;
    let mut times: Vec<i64> = facts.iter().map(|f| f.finished_at).collect();
    times.sort_unstable();
    // bucket edges: the hour a run ended in, and the hour after another's
    let at = |i: usize, after: i64| DateTime::from_timestamp_micros(times[i].div_euclid(HOUR) * HOUR + after);
    let day = |group_by| AnalyticsQuery { granularity: Granularity::Day, group_by, ..AnalyticsQuery::default() };
    vec![
        day(vec![Agent, Model]),
        day(vec![]),
        day(vec![Status, Provider]),
        AnalyticsQuery { group_by: vec![Agent, Model, Provider, Status], ..AnalyticsQuery::default() },
        AnalyticsQuery {
            from: at(times.len() / 4, 0),
            to: at(3 * times.len() / 4, HOUR),
            status: Some("done".into()),
            group_by: vec![Model],
            ..AnalyticsQuery::default()
        },
        AnalyticsQuery { to: at(times.len() / 2, 0), ..day(vec![Agent]) },
        AnalyticsQuery { agent_id: Some(facts[0].agent_id.clone()), ..day(vec![Status]) },
        AnalyticsQuery {
            model: Some(facts[0].model.clone()),
            provider: Some(facts[0].provider.clone()),
            ..day(vec![])
        },
    ]
}

async fn rollups_equal_per_run_aggregation(log: TestLog) {
    let config = WorkloadConfig { min_events: 4_000, ..WorkloadConfig::default() };
    let workload = Workload::generate(&config).unwrap();
    for batch in workload.batches(8) {
        log.store.append_multi(batch).await.unwrap();
    }
    let db = ReadDb::from(log.store.database());
    // small batches: most cells are read back and added to by later batches
    let options = RunnerOptions { batch_size: 150, retry_delay: Duration::from_millis(20), ..RunnerOptions::default() };
    let runner =
        ProjectionRunner::new(Arc::clone(&log.store), db.clone(), vec![Arc::new(AnalyticsProjection)], options);
    runner.catch_up().await.unwrap();

    let facts = facts(&db).await;
    let users: std::collections::BTreeSet<&str> = facts.iter().map(|f| f.user_id.as_str()).collect();
    assert!(facts.len() > 50 && users.len() > 2, "{} runs of {} users", facts.len(), users.len());
    assert!(facts.iter().any(|f| f.duration_ms.is_some()) && facts.iter().any(|f| f.status != "done"));
    for q in queries(&facts) {
        let admin = query(&db, None, &q, MAX_CELLS).await.unwrap();
        assert!(!admin.buckets.is_empty(), "{q:?}");
        assert_eq!(admin, per_run(&facts, None, &q), "admin: {q:?}");
        for user in &users {
            assert_eq!(
                query(&db, Some(user), &q, MAX_CELLS).await.unwrap(),
                per_run(&facts, Some(user), &q),
                "{user}: {q:?}"
            );
        }
    }
    // the agent and fleet rows are the per-owner rows summed over the dimensions they drop:
    // fewer of them, as many runs
    let count = |sql: String| {
        let db = db.clone();
        async move { db.fetch(&sql, &[]).await.unwrap()[0].i64(0).unwrap() }
    };
    let owned = count("SELECT COUNT(*) FROM analytics_rollups".into()).await;
    let runs = count("SELECT CAST(SUM(runs) AS BIGINT) FROM analytics_rollups".into()).await;
    for table in ["analytics_agent_rollups", "analytics_fleet_rollups"] {
        let rows = count(format!("SELECT COUNT(*) FROM {table}")).await;
        assert!(rows < owned, "{rows} rows in {table}, {owned} per-owner rows");
        assert_eq!(count(format!("SELECT CAST(SUM(runs) AS BIGINT) FROM {table}")).await, runs, "{table}");
    }
}

both!(rollups_equal_per_run_aggregation as rollups_equal_per_run_aggregation);
