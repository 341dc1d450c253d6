//! Value types several aggregates share: what a run ran under ([`AgentRef`]), what it used
//! ([`Usage`]), how it was scored ([`ReviewScore`]) and what it hands to the next run
//! ([`Handoff`]), and which links a person may be sent to ([`is_safe_link`]). They live here,
//! not in one aggregate, so operations, tasks and budgets each depend on this module and not on
//! each other.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The agent and config version an operation runs under, snapshotted at creation so a replay
/// shows exactly which model and prompt a run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRef {
    /// The agent.
    pub agent_id: String,
    /// The agent's config version at creation.
    pub config_version: u64,
    /// Model at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl AgentRef {
    /// This roster reference with a caller's explicit `model` / `provider` for one run: the
    /// reference the run uses, and which settings differ from the roster's (`model`,
    /// `provider`).
    pub fn with_overrides(
        mut self,
        model: Option<String>,
        provider: Option<String>,
    ) -> (AgentRef, Vec<String>) {
        let mut overridden = Vec::new();
        if let Some(m) = model.filter(|m| self.model.as_ref() != Some(m)) {
            self.model = Some(m);
            overridden.push("model".to_string());
        }
        if let Some(p) = provider.filter(|p| self.provider.as_ref() != Some(p)) {
            self.provider = Some(p);
            overridden.push("provider".to_string());
        }
        (self, overridden)
    }
}

/// A review score on an operation or a task topic (upstream `review_scores` items).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewScore {
    /// The rubric it was scored against.
    pub rubric_id: String,
    /// 0 to 100.
    pub score: u8,
    /// Whether it passed.
    pub passed: bool,
    /// The reviewer's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Where a brief decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BriefDecisionSource {
    /// A fixed rule.
    Rule,
    /// A model judged it (the worker passed the judgement in).
    LlmJudge,
}

/// Whether a finished topic gets a brief, and why (upstream `handoff.briefDecision`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefDecision {
    /// Emit a brief.
    pub emit: bool,
    /// Why.
    pub reason: String,
    /// Rule or judge.
    pub source: BriefDecisionSource,
    /// When decided.
    pub decided_at: DateTime<Utc>,
}

/// A run's hand-off: what the next run starts from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handoff {
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Key findings.
    #[serde(default)]
    pub key_findings: Vec<String>,
    /// The next action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// The run's raw last assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The brief decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief_decision: Option<BriefDecision>,
}

/// Measured usage. Every field is `None` until something measured it: unknown is never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// All tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cost in millionths of the currency unit (upstream stores numeric(20,6); integers keep
    /// sums exact and JSON round trips lossless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl Usage {
    /// The sum of two usages: a field stays `None` only if neither side measured it.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: add_measured(self.input_tokens, other.input_tokens),
            output_tokens: add_measured(self.output_tokens, other.output_tokens),
            total_tokens: add_measured(self.total_tokens, other.total_tokens),
            cost_micros: add_measured(self.cost_micros, other.cost_micros),
        }
    }

    /// Nothing measured at all.
    pub fn is_unmeasured(&self) -> bool {
        *self == Usage::default()
    }
}

/// The sum of two measurements; unmeasured plus measured is the measured one.
fn add_measured(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// May a page link to `url`: an `http(s)` address or a relative one? Any other scheme
/// (`javascript:`, `data:`, …) is refused, and so are blanks and control characters, which
/// browsers strip (`java\tscript:` is `javascript:` to them).
pub fn is_safe_link(url: &str) -> bool {
    if url.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    // A scheme is what precedes the first `:` when no `/`, `?` or `#` comes before it.
    match url.find([':', '/', '?', '#']) {
        Some(i) if url[i..].starts_with(':') => {
            let scheme = &url[..i];
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        }
        _ => true,
    }
}
