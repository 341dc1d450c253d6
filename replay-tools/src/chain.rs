//! `agentlog-replay chain <root-source-id>`: the causal tree of one chain, from its source
//! through signals, actions and state changes to notifications. Read from the log itself (by
//! `rootSourceId`, an indexed column), so it needs no read model to be up to date.

use std::{collections::HashMap, process::ExitCode};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{EventFilter, EventStore};
use anyhow::{Context, bail};
use serde::Serialize;
use uuid::Uuid;

use crate::{options::Global, output, store};

/// Arguments of `chain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The chain's rootSourceId: the event id of its source event.
    pub root_source_id: String,
}

/// What part an event plays in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The event the chain starts at.
    Source,
    /// `signal.emitted`.
    Signal,
    /// `signal.action_dispatched` / `signal.action_completed`.
    Action,
    /// `notification.*`.
    Notification,
    /// `brief.*`.
    Brief,
    /// Any other state change of an aggregate.
    StateChange,
}

impl NodeKind {
    fn of(e: &RecordedEvent) -> Self {
        let t = e.event_type.as_str();
        if e.metadata.chain.parent_node_id.is_none() {
            Self::Source
        } else if t == "signal.emitted" {
            Self::Signal
        } else if t.starts_with("signal.action_") {
            Self::Action
        } else if t.starts_with("notification.") {
            Self::Notification
        } else if t.starts_with("brief.") {
            Self::Brief
        } else {
            Self::StateChange
        }
    }
}

/// One event of the tree, in depth-first order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainNode {
    /// Distance from the source (0 = the source; an orphan whose parent is not in the chain
    /// starts again at 0).
    pub depth: usize,
    /// Its part in the chain.
    pub kind: NodeKind,
    /// True when its parentNodeId names no event of this chain.
    pub orphan: bool,
    /// The event.
    pub event: RecordedEvent,
}

/// The tree of a chain.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainTree {
    /// The root source id.
    pub root_source_id: Uuid,
    /// The nodes, depth first (children in log order).
    pub nodes: Vec<ChainNode>,
}

/// The causal tree of the chain rooted at `root`.
pub async fn chain_tree(store: &dyn EventStore, root: Uuid) -> anyhow::Result<ChainTree> {
    let events = store::read_all(store, 0, None, &EventFilter::all().with_root_source(root)).await?;
    if events.is_empty() {
        bail!("no chain with rootSourceId {root} (chain takes the event id of the chain's source event)");
    }
    Ok(ChainTree { root_source_id: root, nodes: tree(events) })
}

/// Arrange a chain's events (in log order) as a depth-first tree.
pub fn tree(events: Vec<RecordedEvent>) -> Vec<ChainNode> {
    let index: HashMap<Uuid, usize> = events.iter().enumerate().map(|(i, e)| (e.event_id, i)).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); events.len()];
    let mut tops = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match e.metadata.chain.parent_node_id.and_then(|p| index.get(&p)) {
            Some(&parent) if parent != i => children[parent].push(i),
            _ => tops.push(i),
        }
    }
    // Iterative depth-first walk: chains can be long, the stack must not be.
    let mut order = Vec::with_capacity(events.len());
    let mut visited = vec![false; events.len()];
    let mut stack: Vec<(usize, usize)> = tops.iter().rev().map(|&i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut visited[i], true) {
            continue;
        }
        order.push((i, depth));
        stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
    }
    // A parent cycle (only a tampered log has one) is never reached from a top: list it last.
    for (i, seen) in visited.iter().enumerate() {
        if !seen {
            order.push((i, 0));
        }
    }
    let mut slots: Vec<Option<RecordedEvent>> = events.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(i, depth)| {
            let event = slots[i].take()?;
            let orphan = event.metadata.chain.parent_node_id.is_some_and(|p| !index.contains_key(&p));
            Some(ChainNode { depth, kind: NodeKind::of(&event), orphan, event })
        })
        .collect()
}

/// Run `chain`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    let root = Uuid::parse_str(args.root_source_id.trim())
        .with_context(|| format!("`{}` is not an event id (a UUID)", args.root_source_id))?;
    let store = store::open(&global.database, store::Access::Read).await?;
    let result = chain_tree(&*store, root).await;
    store.close().await;
    let t = result?;
    if global.json {
        output::print_json(&t)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = output::Table::new(["POSITION", "KIND", "TREE", "STREAM", "DETAIL"]);
    for n in &t.nodes {
        let kind = serde_json::to_value(n.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let mut branch = "  ".repeat(n.depth);
        if n.depth > 0 {
            branch.push_str("└─ ");
        }
        branch.push_str(&n.event.event_type);
        if n.orphan {
            branch.push_str(" (parent missing)");
        }
        table.row([
            n.event.position.to_string(),
            kind,
            branch,
            n.event.stream_id.clone(),
            output::summarize(&n.event.payload),
        ]);
    }
    let text = format!("chain {} — {} events\n{}", t.root_source_id, t.nodes.len(), table.render());
    output::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use agentlog_domain::envelope::{Actor, EventMetadata};
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn ev(n: u128, parent: Option<u128>, ty: &str) -> RecordedEvent {
        let id = Uuid::from_u128(n);
        let root = EventMetadata::source(Uuid::from_u128(1), Actor::user("u"), "u", "user:u");
        let metadata = match parent {
            Some(p) => root.caused_by(Uuid::from_u128(p), Actor::system("t")),
            None => root,
        };
        RecordedEvent {
            position: n as i64,
            event_id: id,
            stream_id: "source-x".into(),
            stream_version: n as i64,
            event_type: ty.into(),
            schema_version: 1,
            payload: json!({}),
            metadata,
            recorded_at: Utc::now(),
        }
    }

    #[test]
    fn depth_first_with_children_in_log_order() {
        let nodes = tree(vec![
            ev(1, None, "signal.source_received"),
            ev(2, Some(1), "signal.emitted"),
            ev(3, Some(1), "brief.created"),
            ev(4, Some(2), "signal.action_dispatched"),
            ev(5, Some(99), "notification.created"),
        ]);
        let got: Vec<(i64, usize, bool)> = nodes.iter().map(|n| (n.event.position, n.depth, n.orphan)).collect();
        assert_eq!(got, vec![(1, 0, false), (2, 1, false), (4, 2, false), (3, 1, false), (5, 0, true)]);
        assert_eq!(nodes[0].kind, NodeKind::Source);
        assert_eq!(nodes[2].kind, NodeKind::Action);
    }
}
