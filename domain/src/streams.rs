//! Stream names: every aggregate type is a kind of stream, `<prefix>-<id>`.

/// The kinds of stream, i.e. the aggregate types, and their stream-id prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamKind {
    /// `operation-<operationId>`
    Operation,
    /// `task-<taskId>`
    Task,
    /// `conversation-<topicId>`
    Conversation,
    /// `brief-<briefId>`
    Brief,
    /// `notification-<userId>` (one stream per user)
    Notification,
    /// `cron-<cronJobId>`
    Cron,
    /// `group-<groupId>`
    Group,
    /// `agent-<agentId>`
    Agent,
    /// `source-<sourceId>` (a signal source and the signals and actions it caused)
    Source,
    /// `refusal-<refusalId>` (a reactor's command the domain refused)
    Refusal,
    /// `budget-<budgetId>`
    Budget,
}

impl StreamKind {
    /// Every stream kind.
    pub const ALL: [StreamKind; 11] = [
        Self::Operation,
        Self::Task,
        Self::Conversation,
        Self::Brief,
        Self::Notification,
        Self::Cron,
        Self::Group,
        Self::Agent,
        Self::Source,
        Self::Refusal,
        Self::Budget,
    ];

    /// The stream-id prefix (without the dash).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Operation => "operation",
            Self::Task => "task",
            Self::Conversation => "conversation",
            Self::Brief => "brief",
            Self::Notification => "notification",
            Self::Cron => "cron",
            Self::Group => "group",
            Self::Agent => "agent",
            Self::Source => "source",
            Self::Refusal => "refusal",
            Self::Budget => "budget",
        }
    }

    /// The stream of instance `id`.
    pub fn stream_id(self, id: &str) -> String {
        format!("{}-{id}", self.prefix())
    }

    /// Split a stream id into its kind and instance id.
    pub fn parse(stream_id: &str) -> Option<(StreamKind, &str)> {
        Self::ALL.into_iter().find_map(|kind| {
            stream_id
                .strip_prefix(kind.prefix())
                .and_then(|rest| rest.strip_prefix('-'))
                .filter(|id| !id.is_empty())
                .map(|id| (kind, id))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_round_trip_through_parse() {
        for kind in StreamKind::ALL {
            let id = kind.stream_id("a-b-1");
            assert_eq!(StreamKind::parse(&id), Some((kind, "a-b-1")));
        }
        assert_eq!(StreamKind::Notification.stream_id("u1"), "notification-u1");
        assert_eq!(StreamKind::parse("operation-"), None);
        assert_eq!(StreamKind::parse("operations-x"), None);
        assert_eq!(StreamKind::parse("bogus-x"), None);
    }
}
