//! Filters for reading and subscribing to the whole log.

use agentlog_domain::envelope::RecordedEvent;
use uuid::Uuid;

/// Which events of the whole log a read or subscription wants. Empty = everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only these event types (any of them); empty = all types.
    pub event_types: Vec<String>,
    /// Only streams whose id starts with this prefix.
    pub stream_prefix: Option<String>,
    /// Only events of this causal chain.
    pub root_source_id: Option<Uuid>,
    /// Only events owned by this user.
    pub user_id: Option<String>,
}

impl EventFilter {
    /// Everything.
    pub fn all() -> Self {
        Self::default()
    }

    /// Only these event types.
    pub fn types<I, S>(types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { event_types: types.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// Only streams starting with `prefix`.
    pub fn with_stream_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.stream_prefix = Some(prefix.into());
        self
    }

    /// Only this chain.
    pub fn with_root_source(mut self, root: Uuid) -> Self {
        self.root_source_id = Some(root);
        self
    }

    /// Only this owner.
    pub fn with_user(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// True when the filter lets everything through.
    pub fn is_all(&self) -> bool {
        self.event_types.is_empty()
            && self.stream_prefix.is_none()
            && self.root_source_id.is_none()
            && self.user_id.is_none()
    }

    /// Does `event` pass? (The same rule the SQL filters apply.)
    pub fn matches(&self, event: &RecordedEvent) -> bool {
        (self.event_types.is_empty() || self.event_types.contains(&event.event_type))
            && self.stream_prefix.as_deref().is_none_or(|p| event.stream_id.starts_with(p))
            && self.root_source_id.is_none_or(|r| event.metadata.chain.root_source_id == r)
            && self.user_id.as_deref().is_none_or(|u| event.metadata.user_id == u)
    }
}
