//! Stream names: every aggregate type is a kind of stream, `<prefix>-<id>`; a kind whose ids a
//! client chooses per owner names its streams `<prefix>@<owner>/<id>` (the owner percent-encoded,
//! so the first `/` ends it), and reads its older global streams `<prefix>-<id>` too.

/// The kinds of stream, i.e. the aggregate types, and their stream-id prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamKind {
    /// `operation@<owner>/<operationId>` (per owner; a global `operation-<operationId>` from
    /// before stays its owner's)
    Operation,
    /// `task@<owner>/<taskId>` (per owner; a global `task-<taskId>` from before stays its owner's)
    Task,
    /// `conversation@<owner>/<topicId>` (topic ids are per owner)
    Conversation,
    /// `brief@<owner>/<briefId>` (per owner; a global `brief-<briefId>` from before stays its owner's)
    Brief,
    /// `notification-<userId>` (one stream per user)
    Notification,
    /// `cron@<owner>/<cronJobId>` (per owner)
    Cron,
    /// `group@<owner>/<groupId>` (per owner)
    Group,
    /// `agent@<owner>/<agentId>` (per owner; the built-in agents are everyone's, `agent-<slug>`)
    Agent,
    /// `source@<owner>/<sourceId>` (per owner: a signal source and the signals and actions it caused)
    Source,
    /// `refusal-<refusalId>` (a reactor's command the domain refused)
    Refusal,
    /// `budget@<owner>/<budgetId>` (per owner)
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

    /// Are ids of this kind chosen per owner (two users may each hold an instance `id`)?
    pub fn per_owner(self) -> bool {
        matches!(
            self,
            Self::Operation
                | Self::Task
                | Self::Cron
                | Self::Group
                | Self::Brief
                | Self::Agent
                | Self::Budget
                | Self::Source
                | Self::Conversation
        )
    }

    /// The global stream of instance `id`.
    pub fn stream_id(self, id: &str) -> String {
        format!("{}-{id}", self.prefix())
    }

    /// The stream of `owner`'s instance `id` (`%` and `/` in the owner percent-encoded).
    pub fn owned_stream_id(self, owner: &str, id: &str) -> String {
        let owner = owner.replace('%', "%25").replace('/', "%2F");
        format!("{}@{owner}/{id}", self.prefix())
    }

    /// Split a stream id (either form) into its kind and instance id.
    pub fn parse(stream_id: &str) -> Option<(StreamKind, &str)> {
        Self::ALL.into_iter().find_map(|kind| {
            let rest = stream_id.strip_prefix(kind.prefix())?;
            let id = match rest.strip_prefix('@') {
                Some(owned) => owned.split_once('/').filter(|(owner, _)| !owner.is_empty())?.1,
                None => rest.strip_prefix('-')?,
            };
            (!id.is_empty()).then_some((kind, id))
        })
    }

    /// The owner an owned stream id names (`None` for a global one).
    pub fn parse_owner(stream_id: &str) -> Option<String> {
        let (kind, _) = Self::parse(stream_id)?;
        let owned = stream_id.strip_prefix(kind.prefix())?.strip_prefix('@')?;
        let (owner, _) = owned.split_once('/')?;
        Some(owner.replace("%2F", "/").replace("%25", "%"))
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

    #[test]
    fn owned_stream_ids_round_trip_with_any_owner() {
        for owner in ["alice", "a/b", "100%", "%2F", "x@y/z"] {
            let id = StreamKind::Cron.owned_stream_id(owner, "j/1");
            assert_eq!(StreamKind::parse(&id), Some((StreamKind::Cron, "j/1")));
            assert_eq!(StreamKind::parse_owner(&id).as_deref(), Some(owner));
        }
        assert_eq!(StreamKind::parse_owner("cron-j1"), None);
        assert_eq!(StreamKind::parse("cron@/j1"), None);
        assert_eq!(StreamKind::parse("cron@alice/"), None);
    }
}
