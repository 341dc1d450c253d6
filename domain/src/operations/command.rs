//! What may be asked of an operation.

use serde::{Deserialize, Serialize};

use crate::budgets::BudgetStanding;

use super::hitl::{CardAnswer, HitlCard};
use super::model::{Artifact, OperationError, OperationKind, Phase, Plan, Todo, ToolCall};
use crate::values::Usage;
use crate::values::{AgentRef, ReviewScore};

/// Everything needed to create an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateOperation {
    /// The new operation's id.
    pub operation_id: String,
    /// Its kind.
    pub kind: OperationKind,
    /// The agent and config version it runs under.
    pub agent: AgentRef,
    /// The conversation it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The thread inside that conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The task it runs for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The chat group it runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// The parent operation of a sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_operation_id: Option<String>,
    /// A background sub-agent (counts against the conversation's limit of 3).
    #[serde(default)]
    pub background: bool,
    /// Stop after this many steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Stop once the cost reaches this many micro-units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_limit_micros: Option<u64>,
    /// What started it (`chat`, `signal`, `cron`, `bot`, `task`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The instruction given to a sub-agent or task run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The agent's roster settings the caller overrode for this run (`model`, `provider`);
    /// `agent` holds the values the run used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_overrides: Vec<String>,
    /// Sub-agent levels below its top-level run (0 for a run with no parent): set from the
    /// parent by the start rule ([`crate::rules::operation_start::child_depth`]), whatever a
    /// caller gave.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u32,
    /// Tools are off for this run (a group member told by a `broadcast`): a step that reports
    /// tool calls is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_tools: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CreateOperation {
    /// A conversation operation for `agent` with no links set.
    pub fn new(operation_id: impl Into<String>, kind: OperationKind, agent: AgentRef) -> Self {
        Self {
            operation_id: operation_id.into(),
            kind,
            agent,
            topic_id: None,
            thread_id: None,
            task_id: None,
            group_id: None,
            parent_operation_id: None,
            background: false,
            max_steps: None,
            cost_limit_micros: None,
            trigger: None,
            instruction: None,
            agent_overrides: Vec::new(),
            depth: 0,
            disable_tools: false,
        }
    }
}

/// One step a worker reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    /// The phase the step was in.
    pub phase: Phase,
    /// Tool calls made in the step.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// What the step used; fields stay absent when not measured.
    #[serde(default)]
    pub usage: Usage,
    /// The server's fact: the budgets the run counts against, with what their scopes spent
    /// before this step. An `interrupt` budget this step makes reach its limit ends the run
    /// (`cost_limit`). Never read from a client.
    #[serde(skip)]
    pub budgets: Vec<BudgetStanding>,
}

/// A command to an operation.
#[derive(Debug, Clone, PartialEq)]
pub enum OperationCommand {
    /// Create it (status idle). Conversation, sub-agent and parent rules are checked by
    /// [`crate::rules::operation_start::start_operation`].
    Create(CreateOperation),
    /// A worker claims it with a lease (idle → running on the first claim).
    Claim {
        /// The worker.
        worker_id: String,
        /// Lease length in seconds.
        lease_secs: u32,
    },
    /// The lease holder extends its lease.
    RenewLease {
        /// The worker.
        worker_id: String,
        /// New lease length from now, in seconds.
        lease_secs: u32,
    },
    /// The reaper: an expired lease interrupts a running operation.
    ExpireLease,
    /// The agent moved to another phase.
    ChangePhase(Phase),
    /// A step finished.
    RecordStep(StepReport),
    /// The agent replaced its plan.
    UpdatePlan(Plan),
    /// The agent replaced its todo list.
    UpdateTodos(Vec<Todo>),
    /// The run produced an artifact.
    RecordArtifact(Artifact),
    /// A reviewer scored the run (allowed after it finished, too).
    RecordScore(ReviewScore),
    /// Ask a human; the operation waits for the answer.
    AskHuman(HitlCard),
    /// A human answers the pending card.
    AnswerCard {
        /// The card.
        card_id: String,
        /// The answer.
        answer: CardAnswer,
    },
    /// The pending card's deadline passed.
    TimeoutCard {
        /// The card.
        card_id: String,
    },
    /// Wait until every key (async tool call ids or dispatched child operation ids) reported.
    AwaitAsync {
        /// What to wait for.
        keys: Vec<String>,
    },
    /// A spawned child operation is registered on its parent (issued by
    /// [`crate::rules::operation_start::start_operation`]).
    RegisterChild {
        /// The child.
        child_operation_id: String,
        /// A background sub-agent.
        background: bool,
    },
    /// An async tool or a child reported its result (capped at 32,000 characters).
    ReceiveAsyncResult {
        /// The awaited key.
        key: String,
        /// Whether it succeeded.
        success: bool,
        /// Its result text.
        result: Option<String>,
    },
    /// The worker finished the run.
    Complete {
        /// The final result text (a sub-agent's answer to its parent).
        result: Option<String>,
        /// A task run's hand-off (title, summary, key findings, next action): the task's
        /// lifecycle stores it on the topic and the next run starts from it.
        handoff: Option<crate::values::Handoff>,
        /// A task run: the worker's own judge's verdict on whether the run deserves a result
        /// brief (agentlog calls no model); none = the default rule decides.
        brief_judgement: Option<bool>,
    },
    /// The worker reports failure.
    Fail(OperationError),
    /// The server, right after a step was recorded: end a running run one of whose `interrupt`
    /// budgets is at its limit (`cost_limit`); nothing when none is. It catches a limit reached
    /// by steps of other runs committed beside this run's step, which the step's own check
    /// could not see.
    StopAtBudget {
        /// The run's budgets with what their scopes spent, this run's last step included.
        budgets: Vec<BudgetStanding>,
    },
    /// Stop it from outside (shutdown, a new turn replacing it).
    Interrupt {
        /// Why.
        reason: String,
        /// Whether a later run may resume it.
        can_resume: bool,
    },
    /// Put an interrupted run whose interruption allows it back into the queue (use
    /// [`crate::rules::operation_resume`], which keeps its conversation consistent).
    Resume,
    /// Cancel it (use [`crate::rules::cancel_cascade`] to cancel its descendants too).
    Cancel {
        /// Why.
        reason: Option<String>,
    },
}
