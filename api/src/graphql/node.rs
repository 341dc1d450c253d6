//! Global object identification (Relay's `Node`): every object a client can refetch by itself
//! carries a `globalId` naming its type, its owner and its id, and `node(id:)` answers it.
//!
//! A global id is base64url (no padding) of `<Type>:<owner length>:<owner>:<id>`: the length
//! keeps owners that contain `:` unambiguous, and the owner makes ids that are unique only per
//! owner globally unique. Clients treat it as opaque. `node` answers `null` for an unknown
//! object and for another user's exactly alike (an admin sees every user's).
//!
//! ```
//! use agentlog_api::graphql::node::{GlobalId, NodeType};
//! let id = GlobalId::new(NodeType::Task, "alice", "t:1");
//! assert_eq!(GlobalId::parse(&id.to_string()), Some(id));
//! ```

use std::fmt;

use async_graphql::{Context, ID, Interface, Object};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::{
    agents::{AgentNode, CronJobNode, GroupNode, agent_node, cron_job_node, group_node},
    caller,
    conversations::{ConversationNode, conversation_node},
    inbox::{BriefNode, NotificationNode, brief_node, notification_node},
    operations::{Operation, operation_node},
    tasks::{TaskNode, task_node},
};
use crate::error::{ApiError, GqlResult};

/// An object `node(id:)` can refetch.
#[derive(Interface)]
#[graphql(field(
    name = "global_id",
    ty = "&ID",
    desc = "A globally unique opaque id of this object (its type, owner and id), for `node(id:)`."
))]
pub enum Node {
    /// A task.
    Task(TaskNode),
    /// A brief.
    Brief(BriefNode),
    /// A notification.
    Notification(NotificationNode),
    /// A conversation.
    Conversation(ConversationNode),
    /// An agent.
    Agent(AgentNode),
    /// A group.
    Group(GroupNode),
    /// A cron job.
    CronJob(CronJobNode),
    /// An operation.
    Operation(Operation),
}

/// The types that implement [`Node`], by their GraphQL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    /// `Task`.
    Task,
    /// `Brief`.
    Brief,
    /// `Notification`.
    Notification,
    /// `Conversation`.
    Conversation,
    /// `Agent`.
    Agent,
    /// `Group`.
    Group,
    /// `CronJob`.
    CronJob,
    /// `Operation`.
    Operation,
}

impl NodeType {
    const ALL: [Self; 8] = [
        Self::Task,
        Self::Brief,
        Self::Notification,
        Self::Conversation,
        Self::Agent,
        Self::Group,
        Self::CronJob,
        Self::Operation,
    ];

    /// The GraphQL type name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Task => "Task",
            Self::Brief => "Brief",
            Self::Notification => "Notification",
            Self::Conversation => "Conversation",
            Self::Agent => "Agent",
            Self::Group => "Group",
            Self::CronJob => "CronJob",
            Self::Operation => "Operation",
        }
    }
}

/// A decoded global id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalId {
    /// The object's type.
    pub node_type: NodeType,
    /// Its owner (user id).
    pub owner: String,
    /// Its id among the owner's objects of that type.
    pub id: String,
}

impl GlobalId {
    /// The global id of `owner`'s object `id` of type `node_type`.
    pub fn new(node_type: NodeType, owner: &str, id: &str) -> Self {
        Self { node_type, owner: owner.to_string(), id: id.to_string() }
    }

    /// Read a global id this server handed out (`None` for anything else).
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let plain = String::from_utf8(bytes).ok()?;
        let (name, rest) = plain.split_once(':')?;
        let node_type = NodeType::ALL.into_iter().find(|t| t.name() == name)?;
        let (len, rest) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let owner = rest.get(..len)?;
        let id = rest.get(len..)?.strip_prefix(':')?;
        if owner.is_empty() || id.is_empty() {
            return None;
        }
        Some(Self::new(node_type, owner, id))
    }

    /// As the GraphQL `ID` it is answered as.
    pub fn to_id(&self) -> ID {
        ID(self.to_string())
    }
}

impl fmt::Display for GlobalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = format!("{}:{}:{}:{}", self.node_type.name(), self.owner.len(), self.owner, self.id);
        f.write_str(&URL_SAFE_NO_PAD.encode(plain))
    }
}

/// The global id of `owner`'s object `id` of type `node_type`, as answered.
pub fn global_id(node_type: NodeType, owner: &str, id: &str) -> ID {
    GlobalId::new(node_type, owner, id).to_id()
}

/// The `node` query.
#[derive(Default)]
pub struct NodeQuery;

#[Object]
impl NodeQuery {
    /// Any object by its `globalId`; `null` when there is none the caller may see (an unknown
    /// object and another user's answer alike). VALIDATION for a string that is not a global id.
    async fn node(&self, ctx: &Context<'_>, id: ID) -> GqlResult<Option<Node>> {
        let who = caller(ctx)?;
        let global = GlobalId::parse(&id).ok_or_else(|| ApiError::validation("id", "is not a global id"))?;
        if !who.may_see(&global.owner) {
            return Ok(None);
        }
        let key = global.id.as_str();
        let found = match global.node_type {
            NodeType::Task => task_node(ctx, key).await.map(Node::Task),
            NodeType::Brief => brief_node(ctx, key).await.map(Node::Brief),
            NodeType::Notification => notification_node(ctx, key).await.map(Node::Notification),
            NodeType::Conversation => conversation_node(ctx, key).await.map(Node::Conversation),
            NodeType::Agent => agent_node(ctx, key).await.map(Node::Agent),
            NodeType::Group => group_node(ctx, key).await.map(Node::Group),
            NodeType::CronJob => cron_job_node(ctx, key).await.map(Node::CronJob),
            NodeType::Operation => operation_node(ctx, key).await.map(Node::Operation),
        };
        match found {
            // The id must name this very object: an owner the object does not have (a built-in
            // agent, seen by everyone, under another user's id) is no object at all.
            Ok(node) if owner_of(&node) == global.owner => Ok(Some(node)),
            Ok(_) | Err(ApiError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

fn owner_of(node: &Node) -> &str {
    match node {
        Node::Task(n) => &n.user_id,
        Node::Brief(n) => &n.user_id,
        Node::Notification(n) => &n.user_id,
        Node::Conversation(n) => &n.user_id,
        Node::Agent(n) => &n.user_id,
        Node::Group(n) => &n.user_id,
        Node::CronJob(n) => &n.user_id,
        Node::Operation(n) => &n.user_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_round_trip_and_refuse_garbage() {
        for (owner, id) in [("alice", "t-1"), ("a:b", "x:y"), ("ü", "ï")] {
            let g = GlobalId::new(NodeType::CronJob, owner, id);
            assert_eq!(GlobalId::parse(&g.to_string()), Some(g));
        }
        let other_owner = GlobalId::new(NodeType::Task, "bob", "t-1").to_string();
        assert_ne!(other_owner, GlobalId::new(NodeType::Task, "alice", "t-1").to_string());
        for bad in ["", "nope", "VGFzazox", "VGFzazo5OTphOmI"] {
            assert_eq!(GlobalId::parse(bad), None, "{bad}");
        }
        assert_eq!(GlobalId::parse(&URL_SAFE_NO_PAD.encode("Spaceship:5:alice:t-1")), None);
    }
}
