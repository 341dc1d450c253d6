//! Global object identification (Relay's `Node`): every object a client can refetch by itself
//! carries a `globalId` naming its type, its owner and its id, and `node(id:)` answers it.
//!
//! The id itself is [`super::global_id`].

use super::global_id::{GlobalId, NodeType};
use crate::commands::builtins::BUILTIN_OWNER;

use async_graphql::{Context, ID, Interface, Object};

use super::{
    agents::{AgentNode, agent_node},
    briefs::{BriefNode, brief_node},
    conversations::{ConversationNode, conversation_node},
    cron_jobs::{CronJobNode, cron_job_node},
    groups::{GroupNode, group_node},
    notifications::{NotificationNode, notification_node},
    operations::{Operation, operation_node},
    request::caller,
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
        // A built-in agent is everyone's to see, under its owner `system`.
        let builtin = global.node_type == NodeType::Agent && global.owner == BUILTIN_OWNER;
        if !builtin && !who.may_see(&global.owner) {
            return Ok(None);
        }
        let key = global.id.as_str();
        let found = match global.node_type {
            NodeType::Task => task_node(ctx, Some(&global.owner), key).await.map(Node::Task),
            NodeType::Brief => brief_node(ctx, Some(&global.owner), key).await.map(Node::Brief),
            NodeType::Notification => notification_node(ctx, key).await.map(Node::Notification),
            NodeType::Conversation => conversation_node(ctx, Some(&global.owner), key).await.map(Node::Conversation),
            NodeType::Agent if builtin => agent_node(ctx, None, key).await.map(Node::Agent),
            NodeType::Agent => agent_node(ctx, Some(&global.owner), key).await.map(Node::Agent),
            NodeType::Group => group_node(ctx, Some(&global.owner), key).await.map(Node::Group),
            NodeType::CronJob => cron_job_node(ctx, Some(&global.owner), key).await.map(Node::CronJob),
            NodeType::Operation => operation_node(ctx, Some(&global.owner), key).await.map(Node::Operation),
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
