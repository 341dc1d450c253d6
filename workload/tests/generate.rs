//! The workload generator: deterministic (same seed, same log), realistic (every aggregate and
//! the interesting paths appear), and accepted whole by the domain.

use agentlog_workload::{Workload, WorkloadConfig};

fn config() -> WorkloadConfig {
    WorkloadConfig { min_events: 5_000, ..WorkloadConfig::default() }
}

#[test]
fn workload_is_deterministic_and_covers_every_aggregate() {
    let a = Workload::generate(&config()).unwrap();
    let b = Workload::generate(&config()).unwrap();
    let flat = |w: &Workload| -> Vec<(String, String, serde_json::Value, serde_json::Value)> {
        w.rounds
            .iter()
            .flatten()
            .flat_map(|s| {
                s.events.iter().map(|e| {
                    (
                        s.stream_id.clone(),
                        e.event_id.to_string(),
                        e.payload.clone(),
                        serde_json::to_value(&e.metadata).unwrap(),
                    )
                })
            })
            .collect()
    };
    assert_eq!(flat(&a), flat(&b), "same seed, same log");
    let s = &a.stats;
    eprintln!(
        "events {} decisions {} rounds {} streams {} unfinished {}\n{:#?}\n{:#?}",
        s.events, s.decisions, s.rounds, s.streams, s.unfinished, s.by_kind, s.by_type
    );
    assert!(s.events >= 5_000, "{} events", s.events);
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &s.refused {
        *reasons.entry(r.as_str()).or_default() += 1;
    }
    assert!(s.refused.is_empty(), "the domain refused: {reasons:#?}");
    for kind in ["operation", "task", "conversation", "brief", "notification", "cron", "group", "agent", "source"] {
        assert!(s.by_kind.get(kind).copied().unwrap_or(0) > 0, "no {kind} events: {:?}", s.by_kind);
    }
    let other = Workload::generate(&WorkloadConfig { seed: 8, ..config() }).unwrap();
    assert_ne!(flat(&a)[..200], flat(&other)[..200], "another seed, another log");
}

#[test]
fn workload_counts_each_stream_once() {
    let w = Workload::generate(&config()).unwrap();
    let streams: std::collections::HashSet<&str> = w.rounds.iter().flatten().map(|s| s.stream_id.as_str()).collect();
    assert_eq!(w.stats.streams, streams.len());
}

#[test]
fn workload_event_ids_are_unique() {
    let w = Workload::generate(&config()).unwrap();
    let mut seen: std::collections::HashMap<uuid::Uuid, (String, serde_json::Value)> = Default::default();
    let mut dups = Vec::new();
    for s in w.rounds.iter().flatten() {
        for e in &s.events {
            if let Some(prev) = seen.insert(e.event_id, (e.event_type.clone(), e.payload.clone())) {
                dups.push(format!("{} {} {}\n  was {} {}", e.event_id, e.event_type, e.payload, prev.0, prev.1));
            }
        }
    }
    assert!(dups.is_empty(), "{} duplicate event ids:\n{}", dups.len(), dups[..dups.len().min(5)].join("\n"));
}
