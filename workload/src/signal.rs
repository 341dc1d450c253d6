//! The signal bus: a source received from a producer, a policy's signal, a handler's action and
//! its result (sometimes a failure and a retry) — each caused by the one before — and now and
//! then a run the source starts.

use agentlog_domain::{
    aggregate::Aggregate,
    envelope::Actor,
    error::DomainError,
    signal::{
        AGENT_SIGNAL_SOURCE_TYPES,
        source::{ActionError, ActionStatus, SourceCommand},
    },
    values::AgentRef,
};
use agentlog_eventlog::StreamAppend;
use serde_json::json;

use super::{
    run::{RunMachine, RunPlan, RunStart, RunStory},
    story::{Gen, Poll, Story, caused_by, find, stream_events},
    world::{Decision, Part, World},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Receive,
    Emit,
    Dispatch,
    Complete { attempt: u32 },
    Done,
}

/// One source and what it caused.
pub(crate) struct SignalStory {
    user: String,
    agent: AgentRef,
    source_id: String,
    step: Step,
    /// The event the next node reacts to.
    trigger: Option<agentlog_domain::envelope::NewEvent>,
    signal_id: Option<String>,
    action_id: Option<String>,
}

impl SignalStory {
    /// A source about `agent`'s work for `user`.
    pub(crate) fn new(g: &mut Gen, user: &str, agent: AgentRef) -> Self {
        Self {
            user: user.to_string(),
            agent,
            source_id: g.id("src"),
            step: Step::Receive,
            trigger: None,
            signal_id: None,
            action_id: None,
        }
    }

    fn decision(&self, world: &World, g: &mut Gen, actor: Actor, cmd: SourceCommand) -> Result<Poll, DomainError> {
        let cause = self.trigger.as_ref().map(caused_by);
        let ctx = g.ctx(actor, &self.user, cause);
        let events = world.sources.get(&self.source_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Source(self.source_id.clone(), events))))
    }
}

impl Story for SignalStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let r = &mut g.rng;
        match self.step {
            Step::Receive => {
                let source_type = AGENT_SIGNAL_SOURCE_TYPES[r.below(AGENT_SIGNAL_SOURCE_TYPES.len())];
                let payload = json!({
                    "agentId": self.agent.agent_id,
                    "userId": self.user,
                    "topicId": r.chance(50).then(|| format!("topic-{}", r.next_u64() % 1000)),
                    "message": r.words(3, 15),
                });
                let cmd = SourceCommand::Receive {
                    source_id: self.source_id.clone(),
                    source_type: source_type.into(),
                    payload,
                    scope_key: None,
                    timestamp_ms: g.now().timestamp_millis(),
                };
                self.decision(world, g, Actor::system("producer"), cmd)
            }
            Step::Emit => {
                let signal_type = ["signal.tool.outcome", "signal.user.intent", "signal.run.finished"][r.below(3)];
                let cmd = SourceCommand::EmitSignal {
                    signal_type: signal_type.into(),
                    policy_id: format!("policy.{}", r.words(1, 1)),
                    payload: json!({"score": r.range(0, 100)}),
                };
                self.decision(world, g, Actor::system("signal-bus"), cmd)
            }
            Step::Dispatch => {
                let Some(signal_id) = self.signal_id.clone() else {
                    self.step = Step::Done;
                    return Ok(Poll::Done);
                };
                let action_type = ["action.user-memory.handle", "action.notify.user", "action.task.create"][r.below(3)];
                let cmd = SourceCommand::DispatchAction {
                    signal_id,
                    action_type: action_type.into(),
                    payload: json!({"note": r.words(2, 8)}),
                };
                self.decision(world, g, Actor::system("signal-bus"), cmd)
            }
            Step::Complete { attempt } => {
                let Some(action_id) = self.action_id.clone() else {
                    self.step = Step::Done;
                    return Ok(Poll::Done);
                };
                let fail = attempt == 1 && r.chance(15);
                let (status, error) = if fail {
                    (
                        ActionStatus::Failed,
                        Some(ActionError {
                            code: "timeout".into(),
                            message: "the handler timed out".into(),
                            retriable: Some(true),
                            retry_after_ms: Some(5_000),
                        }),
                    )
                } else if r.chance(10) {
                    (ActionStatus::Skipped, None)
                } else {
                    (ActionStatus::Applied, None)
                };
                let cmd = SourceCommand::RecordActionResult {
                    action_id,
                    status,
                    attempt,
                    detail: r.chance(40).then(|| r.words(2, 8)),
                    error,
                };
                self.decision(world, g, Actor::system("action-executor"), cmd)
            }
            Step::Done => Ok(Poll::Done),
        }
    }

    fn applied(&mut self, appends: &[StreamAppend], _: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        let events = stream_events(appends, &agentlog_domain::streams::StreamKind::Source.stream_id(&self.source_id));
        self.step = match self.step {
            Step::Receive => {
                self.trigger = find(events, "signal.source_received").cloned();
                if let Some(source) = &self.trigger
                    && g.rng.chance(20)
                {
                    let plan = RunPlan::draw(g, true);
                    let run =
                        RunMachine::new(g, &self.user, self.agent.clone(), RunStart::Plain { trigger: "signal" }, plan)
                            .caused_by(caused_by(source));
                    spawned.push(Box::new(RunStory { run }));
                }
                if g.rng.chance(70) { Step::Emit } else { Step::Done }
            }
            Step::Emit => {
                self.trigger = find(events, "signal.emitted").cloned();
                self.signal_id = self
                    .trigger
                    .as_ref()
                    .and_then(|e| e.payload.get("signalId").and_then(|v| v.as_str()).map(str::to_string));
                Step::Dispatch
            }
            Step::Dispatch => {
                self.trigger = find(events, "signal.action_dispatched").cloned();
                self.action_id = self
                    .trigger
                    .as_ref()
                    .and_then(|e| e.payload.get("actionId").and_then(|v| v.as_str()).map(str::to_string));
                Step::Complete { attempt: 1 }
            }
            Step::Complete { attempt } => {
                let failed = find(events, "signal.action_completed")
                    .and_then(|e| e.payload.get("status").and_then(|v| v.as_str()).map(|s| s == "failed"))
                    .unwrap_or(false);
                if failed { Step::Complete { attempt: attempt + 1 } } else { Step::Done }
            }
            Step::Done => Step::Done,
        };
    }

    fn forget(&self, world: &mut World) {
        world.sources.forget(&self.source_id);
    }
}
