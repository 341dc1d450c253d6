//! Scope keys: the lane an event belongs to, for dedupe, rate limits and hand-offs.
//!
//! The first rule that applies wins (SPEC.md §2, upstream `fromProducerInput`):
//! `topic:<topicId>`, `task:<taskId>`, `bot:<platform>:<applicationId>:<threadId>` (all three
//! needed), `agent:<agentId>:user:<userId>` (both needed), `user:<userId>`, `fallback:global`.
//! Empty strings count as absent.
//!
//! ```
//! use agentlog_domain::scope::ScopeInput;
//! let key = ScopeInput { task_id: Some("t1"), user_id: Some("u1"), ..Default::default() }.scope_key();
//! assert_eq!(key, "task:t1");
//! ```

use serde::{Deserialize, Serialize};

/// The identifiers a producer knows about the thing an event concerns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScopeInput<'a> {
    /// The conversation topic.
    pub topic_id: Option<&'a str>,
    /// The task.
    pub task_id: Option<&'a str>,
    /// A bot integration's platform (e.g. `slack`).
    pub platform: Option<&'a str>,
    /// A bot integration's application id.
    pub application_id: Option<&'a str>,
    /// A bot integration's thread on its platform.
    pub platform_thread_id: Option<&'a str>,
    /// The agent.
    pub agent_id: Option<&'a str>,
    /// The user.
    pub user_id: Option<&'a str>,
}

fn present(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

impl ScopeInput<'_> {
    /// The scope key by the first rule that applies.
    pub fn scope_key(&self) -> String {
        if let Some(topic) = present(self.topic_id) {
            return format!("topic:{topic}");
        }
        if let Some(task) = present(self.task_id) {
            return format!("task:{task}");
        }
        if let (Some(platform), Some(app), Some(thread)) =
            (present(self.platform), present(self.application_id), present(self.platform_thread_id))
        {
            return format!("bot:{platform}:{app}:{thread}");
        }
        if let (Some(agent), Some(user)) = (present(self.agent_id), present(self.user_id)) {
            return format!("agent:{agent}:user:{user}");
        }
        if let Some(user) = present(self.user_id) {
            return format!("user:{user}");
        }
        FALLBACK_SCOPE.to_string()
    }
}

/// The scope key when nothing else applies.
pub const FALLBACK_SCOPE: &str = "fallback:global";

/// Owned form of [`ScopeInput`], for payloads and GraphQL inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// The conversation topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Bot platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Bot application id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// Bot thread id on the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_thread_id: Option<String>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

impl Scope {
    /// Borrow as a [`ScopeInput`].
    pub fn as_input(&self) -> ScopeInput<'_> {
        ScopeInput {
            topic_id: self.topic_id.as_deref(),
            task_id: self.task_id.as_deref(),
            platform: self.platform.as_deref(),
            application_id: self.application_id.as_deref(),
            platform_thread_id: self.platform_thread_id.as_deref(),
            agent_id: self.agent_id.as_deref(),
            user_id: self.user_id.as_deref(),
        }
    }

    /// The scope key by the first rule that applies.
    pub fn scope_key(&self) -> String {
        self.as_input().scope_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all<'a>() -> ScopeInput<'a> {
        ScopeInput {
            topic_id: Some("tp"),
            task_id: Some("tk"),
            platform: Some("slack"),
            application_id: Some("app"),
            platform_thread_id: Some("th"),
            agent_id: Some("ag"),
            user_id: Some("us"),
        }
    }

    #[test]
    fn rule_1_topic_wins_over_everything() {
        assert_eq!(all().scope_key(), "topic:tp");
    }

    #[test]
    fn rule_2_task_when_no_topic() {
        let s = ScopeInput { topic_id: None, ..all() };
        assert_eq!(s.scope_key(), "task:tk");
    }

    #[test]
    fn rule_3_bot_needs_all_three_parts() {
        let s = ScopeInput { topic_id: None, task_id: None, ..all() };
        assert_eq!(s.scope_key(), "bot:slack:app:th");
        let missing_thread = ScopeInput { platform_thread_id: None, ..s };
        assert_eq!(missing_thread.scope_key(), "agent:ag:user:us");
        let missing_app = ScopeInput { application_id: Some(""), ..s };
        assert_eq!(missing_app.scope_key(), "agent:ag:user:us");
    }

    #[test]
    fn rule_4_agent_and_user_together() {
        let s = ScopeInput { agent_id: Some("ag"), user_id: Some("us"), ..Default::default() };
        assert_eq!(s.scope_key(), "agent:ag:user:us");
        let agent_only = ScopeInput { agent_id: Some("ag"), ..Default::default() };
        assert_eq!(agent_only.scope_key(), FALLBACK_SCOPE);
    }

    #[test]
    fn rule_5_user_alone() {
        let s = ScopeInput { user_id: Some("us"), ..Default::default() };
        assert_eq!(s.scope_key(), "user:us");
    }

    #[test]
    fn rule_6_fallback_when_nothing_applies() {
        assert_eq!(ScopeInput::default().scope_key(), "fallback:global");
        let empties = ScopeInput {
            topic_id: Some(""),
            task_id: Some(""),
            user_id: Some(""),
            ..Default::default()
        };
        assert_eq!(empties.scope_key(), "fallback:global");
    }

    #[test]
    fn owned_scope_matches_borrowed() {
        let s =
            Scope { task_id: Some("t".into()), user_id: Some("u".into()), ..Default::default() };
        assert_eq!(s.scope_key(), "task:t");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json, serde_json::json!({"taskId": "t", "userId": "u"}));
    }
}
