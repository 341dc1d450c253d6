//! What a run measured: throughput and latency percentiles per mutation type, refusals by
//! code, and what each subscriber saw; printed as a table.

use std::{collections::BTreeMap, fmt, time::Duration};

use serde::Serialize;

use crate::config::Scenario;
use crate::stats::Stats;
use crate::stats::percentile;

/// One mutation type's figures.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpReport {
    /// Acknowledged calls.
    pub acknowledged: u64,
    /// Acknowledged per second of the run.
    pub per_second: f64,
    /// Median latency of acknowledged calls, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, in milliseconds.
    pub p99_ms: f64,
    /// Slowest, in milliseconds.
    pub max_ms: f64,
    /// Error answers by code (`CONFLICT`, `CONVERSATION_BUSY`, …, `TRANSPORT` for no answer).
    pub errors: BTreeMap<String, u64>,
    /// Calls sent again after an error.
    pub retries: u64,
}

/// What one subscriber saw.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriberReport {
    /// It read slowly on purpose.
    pub slow: bool,
    /// Events received (each position once).
    pub events: u64,
    /// Events received again or out of order (position not above the last one): must be 0.
    pub duplicates: u64,
    /// Connections lost (and resumed from the last position).
    pub disconnects: u64,
    /// Connection attempts that failed (the server was down).
    pub connect_failures: u64,
    /// The last position received.
    pub last_position: i64,
    /// It reached the log's head as it was when the load ended.
    pub caught_up: bool,
    /// Every position received, in order.
    #[serde(skip)]
    pub positions: Vec<i64>,
    /// For each live event received (recorded after the subscriber began): microseconds from
    /// its `recordedAt` to its arrival at this client.
    #[serde(skip)]
    pub delivery_us: Vec<u64>,
    /// Errors met (the first few).
    pub errors: Vec<String>,
}

/// A run's figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// What the clients did.
    pub scenario: Scenario,
    /// Clients.
    pub clients: usize,
    /// How long the load ran (setup excluded).
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
    /// The fixed schedule's mutations per second (`null`: closed loop).
    pub rate: Option<f64>,
    /// Mutations sent, retries included.
    pub sent: u64,
    /// Mutations acknowledged.
    pub acknowledged: u64,
    /// Latency of every acknowledged mutation, all types together: a type's p99 over a few
    /// hundred calls is its second or third slowest, this one is over all of them.
    pub all_mutations: Latency,
    /// By mutation type.
    pub operations: BTreeMap<String, OpReport>,
    /// The log's head when the load ended.
    pub head_position: i64,
    /// Events the log gained during the run (every writer's, reactors' included).
    pub appended: i64,
    /// Each subscriber.
    pub subscribers: Vec<SubscriberReport>,
    /// Append → delivery latency of live events, normal and slow subscribers apart.
    pub delivery: Vec<DeliveryReport>,
    /// Subscribers that had subscribed when the clients started.
    pub subscribed: usize,
    /// How long the subscribers took to subscribe, before the clients started.
    pub subscribe_secs: f64,
}

/// Percentiles of a set of latencies.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// Latencies measured.
    pub count: u64,
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// Slowest, in milliseconds.
    pub max_ms: f64,
}

impl Latency {
    /// The percentiles of `sorted` (microseconds, ascending).
    fn of(sorted: &[u64]) -> Self {
        Self {
            count: sorted.len() as u64,
            p50_ms: ms(percentile(sorted, 50.0)),
            p99_ms: ms(percentile(sorted, 99.0)),
            max_ms: ms(sorted.last().copied().unwrap_or(0)),
        }
    }
}

/// Append → delivery latency (an event's `recordedAt` to its arrival at a subscriber) of the
/// live events one kind of subscriber received, every subscriber's together.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryReport {
    /// The slow subscribers' deliveries (they fall behind on purpose) or the others'.
    pub slow: bool,
    /// Deliveries timed.
    pub deliveries: u64,
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// Slowest, in milliseconds.
    pub max_ms: f64,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Beyond this many subscribers the report prints one summary line per kind instead.
const MAX_SUBSCRIBER_LINES: usize = 20;

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Report {
    /// Did the server fail a subscriber? One saw an event twice or out of order, or a normal
    /// one did not reach the head by the drain's end. A slow subscriber still reading then is
    /// what it was asked to be.
    pub fn subscribers_failed(&self) -> bool {
        self.subscribers.iter().any(|s| s.duplicates > 0 || (!s.caught_up && !s.slow))
    }

    /// Summarise merged figures over `elapsed`.
    pub fn build(scenario: Scenario, clients: usize, elapsed: Duration, sent: u64, stats: Stats) -> Self {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mut operations = BTreeMap::new();
        let mut acknowledged = 0;
        let mut all = Vec::new();
        for (op, mut s) in stats.ops {
            s.latencies_us.sort_unstable();
            all.extend_from_slice(&s.latencies_us);
            let n = s.latencies_us.len() as u64;
            acknowledged += n;
            let latency = Latency::of(&s.latencies_us);
            operations.insert(
                op.to_string(),
                OpReport {
                    acknowledged: n,
                    per_second: n as f64 / secs,
                    p50_ms: latency.p50_ms,
                    p99_ms: latency.p99_ms,
                    max_ms: latency.max_ms,
                    errors: s.errors,
                    retries: s.retries,
                },
            );
        }
        all.sort_unstable();
        Self {
            scenario,
            clients,
            elapsed,
            rate: None,
            sent,
            acknowledged,
            all_mutations: Latency::of(&all),
            operations,
            head_position: 0,
            appended: 0,
            subscribers: Vec::new(),
            delivery: Vec::new(),
            subscribed: 0,
            subscribe_secs: 0.0,
        }
    }

    /// Add the subscribers' reports and summarise their deliveries.
    pub fn add_subscribers(&mut self, subscribers: Vec<SubscriberReport>) {
        self.subscribers = subscribers;
        self.delivery.clear();
        for slow in [false, true] {
            let mut all: Vec<u64> = self
                .subscribers
                .iter()
                .filter(|s| s.slow == slow)
                .flat_map(|s| s.delivery_us.iter().copied())
                .collect();
            if all.is_empty() {
                continue;
            }
            all.sort_unstable();
            let latency = Latency::of(&all);
            self.delivery.push(DeliveryReport {
                slow,
                deliveries: latency.count,
                p50_ms: latency.p50_ms,
                p99_ms: latency.p99_ms,
                max_ms: latency.max_ms,
            });
        }
    }

    /// One line for the normal subscribers and one for the slow ones: how many reached the
    /// head, the fewest and most events received, duplicates and reconnects in all.
    fn subscriber_summary(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for slow in [false, true] {
            let group: Vec<&SubscriberReport> = self.subscribers.iter().filter(|s| s.slow == slow).collect();
            if group.is_empty() {
                continue;
            }
            let caught_up = group.iter().filter(|s| s.caught_up).count();
            let fewest = group.iter().map(|s| s.events).min().unwrap_or(0);
            let most = group.iter().map(|s| s.events).max().unwrap_or(0);
            let duplicates: u64 = group.iter().map(|s| s.duplicates).sum();
            let reconnects: u64 = group.iter().map(|s| s.disconnects).sum();
            writeln!(
                f,
                "{} {} subscribers: {caught_up} caught up, {fewest}–{most} events each, {duplicates} duplicate(s), \
                 {reconnects} reconnect(s){}",
                group.len(),
                if slow { "slow" } else { "normal" },
                group.iter().find_map(|s| s.errors.first()).map(|e| format!("; first error: {e}")).unwrap_or_default()
            )?;
        }
        Ok(())
    }

    /// Error answers with `code`, all mutation types together.
    pub fn errors(&self, code: &str) -> u64 {
        self.operations.values().filter_map(|o| o.errors.get(code)).sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        writeln!(
            f,
            "{:?} load, {} clients, {secs:.1} s: {} mutations sent, {} acknowledged ({:.0}/s), {} events appended ({:.0}/s), log head at {}",
            self.scenario,
            self.clients,
            self.sent,
            self.acknowledged,
            self.acknowledged as f64 / secs.max(1e-9),
            self.appended,
            self.appended as f64 / secs.max(1e-9),
            self.head_position
        )?;
        if let Some(rate) = self.rate {
            writeln!(f, "on a fixed schedule of {rate} mutations/s")?;
        }
        writeln!(
            f,
            "{:<22} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7}  errors",
            "mutation", "acked", "per s", "p50 ms", "p99 ms", "max ms", "retries"
        )?;
        for (op, o) in &self.operations {
            let errors: Vec<String> = o.errors.iter().map(|(c, n)| format!("{c} {n}")).collect();
            writeln!(
                f,
                "{op:<22} {:>8} {:>8.1} {:>9.2} {:>9.2} {:>9.1} {:>7}  {}",
                o.acknowledged,
                o.per_second,
                o.p50_ms,
                o.p99_ms,
                o.max_ms,
                o.retries,
                errors.join(", ")
            )?;
        }
        let all = &self.all_mutations;
        writeln!(
            f,
            "{:<22} {:>8} {:>8.1} {:>9.2} {:>9.2} {:>9.1}",
            "(all mutations)",
            all.count,
            all.count as f64 / secs.max(1e-9),
            all.p50_ms,
            all.p99_ms,
            all.max_ms
        )?;
        if !self.subscribers.is_empty() {
            writeln!(
                f,
                "subscribers: {} of {} subscribed in {:.0} ms, before the clients started",
                self.subscribed,
                self.subscribers.len(),
                self.subscribe_secs * 1000.0
            )?;
        }
        for d in &self.delivery {
            writeln!(
                f,
                "append → delivery, {} subscribers: {} deliveries, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                if d.slow { "slow" } else { "normal" },
                d.deliveries,
                d.p50_ms,
                d.p99_ms,
                d.max_ms
            )?;
        }
        if self.subscribers.len() > MAX_SUBSCRIBER_LINES {
            return self.subscriber_summary(f);
        }
        for (i, s) in self.subscribers.iter().enumerate() {
            writeln!(
                f,
                "subscriber {i}: {} events up to position {}{}, {} duplicate(s), {} reconnect(s){}",
                s.events,
                s.last_position,
                if s.caught_up { " (caught up)" } else { " (NOT caught up)" },
                s.duplicates,
                s.disconnects,
                s.errors.first().map(|e| format!("; first error: {e}")).unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_mutations_are_summarised_together() {
        let mut stats = Stats::default();
        // 99 fast calls of one type and one slow call of another: each type's p99 is its own
        // latency, the p99 over all 100 calls is a fast one and the slow one is the maximum.
        for _ in 0..99 {
            stats.ack("fast", Duration::from_millis(1));
        }
        stats.ack("slow", Duration::from_millis(50));
        let report = Report::build(Scenario::Mixed, 1, Duration::from_secs(1), 100, stats);
        assert_eq!(report.operations["slow"].p99_ms, 50.0);
        let all = &report.all_mutations;
        assert_eq!((all.count, all.p50_ms, all.p99_ms, all.max_ms), (100, 1.0, 1.0, 50.0));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["allMutations"]["p99Ms"], 1.0);
        assert!(report.to_string().contains("(all mutations)"));
    }

    #[test]
    fn only_the_server_failing_a_subscriber_is_a_failure() {
        let mut report = Report::build(Scenario::Mixed, 1, Duration::from_secs(1), 0, Stats::default());
        let caught_up = SubscriberReport { caught_up: true, ..SubscriberReport::default() };
        let behind = SubscriberReport { caught_up: false, ..SubscriberReport::default() };
        report.subscribers = vec![caught_up.clone(), SubscriberReport { slow: true, ..behind.clone() }];
        assert!(!report.subscribers_failed(), "a slow subscriber still reading");
        report.subscribers.push(behind);
        assert!(report.subscribers_failed(), "a normal subscriber that missed the head");
        report.subscribers = vec![SubscriberReport { slow: true, duplicates: 1, ..caught_up }];
        assert!(report.subscribers_failed(), "an event twice");
    }
}
