//! `agentlog-replay state <stream-id> [--at <position>]`: fold any stream into its aggregate's
//! state as of a position (default: now), with the domain's own `evolve`.

use std::process::ExitCode;

use agentlog_domain::streams::StreamKind;
use agentlog_domain::{
    agents::Agent, briefs::Brief, conversations::Conversation, cron_jobs::CronJob, envelope::RecordedEvent,
    groups::Group, notifications::Notifications, operations::Operation, refusals::Refusal, signal::Source, tasks::Task,
};
use agentlog_eventlog::fold_recorded;
use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::Value;

use crate::{options::Global, output, store};

/// Arguments of `state`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The stream: `<kind>@<owner>/<id>` (`operation@alice/op1`, `task@alice/t1`, …), or
    /// `<kind>-<id>` for one written before ids were per owner; kinds: operation, task,
    /// conversation, brief, notification, cron, group, agent, source, refusal, budget.
    pub stream_id: String,
    /// Fold only the events at or before this position.
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub at: Option<i64>,
}

/// An aggregate's state as of a position.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateAt {
    /// The stream.
    pub stream_id: String,
    /// Its aggregate kind (the stream-id prefix).
    pub kind: String,
    /// The position asked for (`None` = the head).
    pub at: Option<i64>,
    /// The stream version the state is folded up to (0 = the stream did not exist yet).
    pub version: i64,
    /// The position of the last event folded (0 when none).
    pub position: i64,
    /// The state, as the aggregate serializes it.
    pub state: Value,
}

/// Fold `events` (one stream, in order) up to `at` into the aggregate of `kind`, as JSON.
pub fn fold_state(kind: StreamKind, events: &[RecordedEvent], at: Option<i64>) -> anyhow::Result<(Value, i64)> {
    fn fold<A: agentlog_domain::aggregate::Aggregate>(
        events: &[RecordedEvent],
        at: Option<i64>,
    ) -> anyhow::Result<(Value, i64)> {
        let (state, version) = fold_recorded::<A>(events, at)?;
        Ok((serde_json::to_value(&state).context("encoding the state")?, version))
    }
    match kind {
        StreamKind::Operation => fold::<Operation>(events, at),
        StreamKind::Task => fold::<Task>(events, at),
        StreamKind::Conversation => fold::<Conversation>(events, at),
        StreamKind::Brief => fold::<Brief>(events, at),
        StreamKind::Notification => fold::<Notifications>(events, at),
        StreamKind::Cron => fold::<CronJob>(events, at),
        StreamKind::Group => fold::<Group>(events, at),
        StreamKind::Agent => fold::<Agent>(events, at),
        StreamKind::Source => fold::<Source>(events, at),
        StreamKind::Refusal => fold::<Refusal>(events, at),
        StreamKind::Budget => fold::<agentlog_domain::budgets::Budget>(events, at),
    }
}

/// The state of `stream_id` as of `at`.
pub async fn state_at(
    store: &dyn agentlog_eventlog::EventStore,
    stream_id: &str,
    at: Option<i64>,
) -> anyhow::Result<StateAt> {
    let Some((kind, _)) = StreamKind::parse(stream_id) else {
        bail!(
            "`{stream_id}` is not a stream id: expected <kind>-<id> (or <kind>@<owner>/<id> for a kind whose ids are per owner) with kind one of operation, task, conversation, brief, notification, cron, group, agent, source"
        );
    };
    let events = store::read_stream(store, stream_id).await?;
    if events.is_empty() {
        bail!("stream `{stream_id}` does not exist (no events)");
    }
    let (state, version) = fold_state(kind, &events, at).with_context(|| format!("folding `{stream_id}`"))?;
    let position = events.iter().take_while(|e| at.is_none_or(|p| e.position <= p)).last().map_or(0, |e| e.position);
    Ok(StateAt { stream_id: stream_id.to_string(), kind: kind.prefix().to_string(), at, version, position, state })
}

/// Run `state`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Access::Read).await?;
    let result = state_at(&*store, &args.stream_id, args.at).await;
    store.close().await;
    let s = result?;
    if global.json {
        output::print_json(&s)?;
    } else {
        let at = s.at.map_or("head".to_string(), |p| p.to_string());
        let mut text = format!(
            "stream {}  kind {}  as of {at}: version {}, last event at position {}\n",
            s.stream_id, s.kind, s.version, s.position
        );
        text.push_str(&serde_json::to_string_pretty(&s.state).context("encoding the state")?);
        text.push('\n');
        output::print_text(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
