//! Conversations: a topic's messages, threads, message groups and its parsed tree (upstream's
//! `contextTree`, `flatList`, `messageMap`), and the commands that change them.

use crate::graphql::request::commands;
use agentlog_domain::conversations::{
    ChatMessage, Conversation, ConversationCommand, MessageGroupKind, NewMessageGroup, ThreadKind,
};
use agentlog_projections::conversations::{self as read, ConversationRow, MessageGroupRow, MessageRow, ThreadRow};
use async_graphql::{ComplexObject, Context, ID, Json, Object, SimpleObject, connection::Connection};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::conversation_tree::{ConversationTree, load_tree};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::node_after;
use crate::graphql::request::reads;
use crate::graphql::wire::decode_open;
use crate::graphql::wire::from_wire;
use crate::graphql::wire::wire;

use super::global_id::{NodeType, global_id};
use crate::{
    deltas::DeltaError,
    error::{ApiError, GqlResult},
};

/// A conversation (topic).
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Conversation")]
pub struct ConversationNode {
    /// Its topic id.
    pub topic_id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// Title.
    pub title: Option<String>,
    /// The agent it talks to.
    pub agent_id: Option<String>,
    /// Its group.
    pub group_id: Option<String>,
    /// Live messages.
    pub message_count: i64,
    /// Log position of the last message change.
    pub messages_version: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<ConversationRow> for ConversationNode {
    fn from(c: ConversationRow) -> Self {
        Self {
            global_id: global_id(NodeType::Conversation, &c.user_id, &c.topic_id),
            topic_id: c.topic_id,
            user_id: c.user_id,
            title: c.title,
            agent_id: c.agent_id,
            group_id: c.group_id,
            message_count: c.message_count,
            messages_version: c.messages_version,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// A stored message.
#[derive(SimpleObject, Clone)]
#[graphql(name = "Message")]
pub struct MessageNode {
    /// Its id.
    pub message_id: String,
    /// Order of creation within the topic.
    pub seq: i64,
    /// `user`, `assistant`, `tool`, `task`, …
    pub role: String,
    /// Parent message.
    pub parent_id: Option<String>,
    /// Thread it belongs to.
    pub thread_id: Option<String>,
    /// The message as LobeHub shapes it (what the parser reads).
    pub message: Json<Value>,
    /// Soft-deleted.
    pub deleted: bool,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<MessageRow> for MessageNode {
    fn from(m: MessageRow) -> Self {
        Self {
            message_id: m.message_id,
            seq: m.seq,
            role: m.role,
            parent_id: m.parent_id,
            thread_id: m.thread_id,
            message: Json(m.message),
            deleted: m.deleted,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

/// A thread opened off a message.
#[derive(SimpleObject, Clone)]
#[graphql(name = "Thread")]
pub struct ThreadNode {
    /// Its id.
    pub thread_id: String,
    /// The message it branches from.
    pub source_message_id: String,
    /// `continuation`, `standalone`, …
    pub kind: String,
    /// Title.
    pub title: Option<String>,
    /// Opened.
    pub created_at: DateTime<Utc>,
}

impl From<ThreadRow> for ThreadNode {
    fn from(t: ThreadRow) -> Self {
        Self {
            kind: wire(&t.kind),
            thread_id: t.thread_id,
            source_message_id: t.source_message_id,
            title: t.title,
            created_at: t.created_at,
        }
    }
}

/// A group of a topic's messages (upstream `message_groups`).
#[derive(SimpleObject, Clone)]
#[graphql(name = "MessageGroup")]
pub struct MessageGroupNode {
    /// Its id (the tree shows a compression group as a message with this id).
    pub group_id: String,
    /// `compression` or `parallel`.
    pub kind: String,
    /// Its members, as created (a deleted member no longer shows in the tree).
    pub message_ids: Vec<String>,
    /// Compression: the members shown beside the summary (`pinnedMessages`).
    pub pinned_message_ids: Vec<String>,
    /// Parallel: the message the members answer.
    pub parent_message_id: Option<String>,
    /// Compression: the summary.
    pub content: Option<String>,
    /// Parallel: title.
    pub title: Option<String>,
    /// Parallel: description.
    pub description: Option<String>,
    /// Compression: metadata.
    pub metadata: Option<Json<Value>>,
    /// Created (the compressed group's `createdAt`).
    pub created_at: DateTime<Utc>,
}

impl From<MessageGroupRow> for MessageGroupNode {
    fn from(g: MessageGroupRow) -> Self {
        Self {
            group_id: g.group_id,
            kind: g.kind.name().to_string(),
            message_ids: g.message_ids,
            pinned_message_ids: g.pinned_message_ids,
            parent_message_id: g.parent_message_id,
            content: g.content,
            title: g.title,
            description: g.description,
            metadata: g.metadata.map(Json),
            created_at: g.created_at,
        }
    }
}

#[ComplexObject]
impl ConversationNode {
    /// Messages in creation order (deleted ones only when asked for).
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn messages(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        #[graphql(default)] include_deleted: bool,
    ) -> GqlResult<Connection<String, MessageNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::topic_messages(reads(ctx), &self.user_id, &self.topic_id, include_deleted, &request).await?;
        Ok(connection(page, MessageNode::from))
    }

    /// Threads, in the order they were opened.
    async fn threads(&self, ctx: &Context<'_>) -> GqlResult<Vec<ThreadNode>> {
        let rows = read::topic_threads(reads(ctx), &self.user_id, &self.topic_id).await?;
        Ok(rows.into_iter().map(ThreadNode::from).collect())
    }

    /// Message groups, in the order they were created.
    async fn message_groups(&self, ctx: &Context<'_>) -> GqlResult<Vec<MessageGroupNode>> {
        let rows = read::topic_message_groups(reads(ctx), &self.user_id, &self.topic_id).await?;
        Ok(rows.into_iter().map(MessageGroupNode::from).collect())
    }

    /// The parsed tree (`contextTree`, `flatList`, `messageMap`), from the tree cache: only
    /// messages changed since the cached version are read. The topic's message groups are
    /// parsed as upstream's query hands them to `parse`: a compression group replaces its
    /// members with one `compressedGroup` message, a parallel group is a `compare` group.
    #[graphql(complexity = "super::cost::once(super::cost::TREE, child_complexity)")]
    async fn tree(&self, ctx: &Context<'_>) -> GqlResult<ConversationTree> {
        Ok(load_tree(ctx, &self.user_id, &self.topic_id).await?)
    }

    /// Upstream's `contextTree` (shorthand for `tree { contextTree }`).
    #[graphql(complexity = "super::cost::once(super::cost::TREE, child_complexity)")]
    async fn context_tree(&self, ctx: &Context<'_>) -> GqlResult<Json<Value>> {
        Ok(load_tree(ctx, &self.user_id, &self.topic_id).await?.context_tree)
    }

    /// Upstream's `flatList` (shorthand for `tree { flatList }`).
    #[graphql(complexity = "super::cost::once(super::cost::TREE, child_complexity)")]
    async fn flat_list(&self, ctx: &Context<'_>) -> GqlResult<Json<Value>> {
        Ok(load_tree(ctx, &self.user_id, &self.topic_id).await?.flat_list)
    }
}

/// Conversation `topic_id` of `owner` (the caller's own when `None`), as the caller may see it.
pub(crate) async fn conversation_node(
    ctx: &Context<'_>,
    owner: Option<&str>,
    topic_id: &str,
) -> Result<ConversationNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("conversation", topic_id)) };
    let row = read::conversation(reads(ctx), owner, topic_id).await?;
    row.map(ConversationNode::from).ok_or_else(|| ApiError::not_found("conversation", topic_id))
}

/// Conversation queries.
#[derive(Default)]
pub struct ConversationsQuery;

#[Object]
impl ConversationsQuery {
    /// One conversation, `topicId` among the caller's own (an admin names another owner with
    /// `ownerId`). NOT_FOUND when missing or someone else's.
    async fn conversation(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationNode> {
        Ok(conversation_node(ctx, owner_id.as_deref(), &topic_id).await?)
    }

    /// Conversations, newest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn conversations(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, ConversationNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::conversations(reads(ctx), caller(ctx)?.owner(), &request).await?;
        Ok(connection(page, ConversationNode::from))
    }
}

/// What a conversation mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct ConversationPayload {
    /// The id it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Its owner.
    #[graphql(skip)]
    pub(crate) owner: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl ConversationPayload {
    /// The conversation after the command (read model, settled); read when asked for).
    async fn conversation(&self, ctx: &Context<'_>) -> GqlResult<ConversationNode> {
        node_after(ctx, self.position, conversation_node(ctx, Some(&self.owner), &self.id)).await
    }
}

async fn run(
    ctx: &Context<'_>,
    topic_id: &str,
    owner_id: Option<&str>,
    command: ConversationCommand,
    request_id: Option<String>,
) -> GqlResult<ConversationPayload> {
    let out = commands(ctx)?
        .owned_by(owner_id)
        .command::<Conversation>(topic_id, command, None, request_id.as_deref())
        .await?;
    Ok(ConversationPayload { id: topic_id.to_string(), owner: out.state.user_id, position: out.position })
}

/// Conversation mutations.
#[derive(Default)]
pub struct ConversationsMutation;

#[Object]
impl ConversationsMutation {
    /// Open a conversation. Topic ids are per owner: another user's `topicId` is no obstacle
    /// (CONFLICT only for one the owner already holds).
    async fn create_conversation(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        title: Option<String>,
        agent_id: Option<String>,
        group_id: Option<String>,
        #[graphql(desc = "The user the conversation is for (admin only); absent: the caller.")] owner_id: Option<
            String,
        >,
    ) -> GqlResult<ConversationPayload> {
        let command = ConversationCommand::Create { topic_id: topic_id.clone(), title, agent_id, group_id };
        let out = commands(ctx)?.create::<Conversation>(&topic_id, command, owner_id.as_deref(), None).await?;
        Ok(ConversationPayload { id: topic_id.to_string(), owner: out.state.user_id, position: out.position })
    }

    /// Append a finished message (`{messageId, role, content, parentId?, threadId?, agentId?,
    /// groupId?, operationId?, tools?, toolCallId?, model?, provider?, metadata?, extra?,
    /// requestId?}`); a repeated `requestId` records nothing. Streamed partial content goes
    /// through `publishMessageDelta`; only the finished message is stored. An `assistant` or
    /// `tool` message with an `operationId` is a report on that run: the run must exist
    /// (NOT_FOUND), and while it holds a lease only its holder writes (`leaseToken`, CONFLICT
    /// otherwise).
    async fn append_message(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        message: Json<Value>,
        lease_token: Option<String>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let message: ChatMessage = decode_open("message", message)?;
        let message_id = message.message_id.clone();
        let (owner, position) =
            commands(ctx)?.owned_by(owner_id.as_deref()).append_message(&topic_id, message, lease_token).await?;
        app(ctx).deltas.finish(&owner, &topic_id, &message_id);
        app(ctx).relay.finish(&owner, &topic_id, &message_id);
        Ok(ConversationPayload { id: topic_id.to_string(), owner, position })
    }

    /// Relay a piece of a message being written to the topic's `messageDeltas` subscribers.
    /// Nothing is stored: append the finished message with `appendMessage`. Answers the bytes
    /// streamed so far. A message appended in the last 10 minutes takes no more deltas
    /// (VALIDATION), on any instance. With PostgreSQL it reaches the subscribers of every server instance on
    /// the database; with SQLite, those of the process that received it.
    async fn publish_message_delta(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        message_id: String,
        delta: String,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<i64> {
        crate::commands::check_id("messageId", &message_id)?;
        let conversation = conversation_node(ctx, owner_id.as_deref(), &topic_id).await?;
        let app = app(ctx);
        let max = app.limits.max_streams_per_user;
        let length =
            app.deltas.publish(&conversation.user_id, &topic_id, &message_id, &delta, max).map_err(|e| match e {
                DeltaError::Limit(m) => ApiError::Limit(m),
                DeltaError::Finished(_) => ApiError::validation("messageId", e.to_string()),
            })?;
        app.relay.publish(&conversation.user_id, &topic_id, &message_id, &delta);
        Ok(length)
    }

    /// Change a message's content, metadata (replaced) or extra fields (merged).
    #[allow(clippy::too_many_arguments)] // the command's fields and the owner are the GraphQL signature
    async fn edit_message(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        message_id: String,
        content: Option<String>,
        metadata: Option<Json<Value>>,
        extra: Option<Json<Value>>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let extra = match extra.map(|e| e.0) {
            None => serde_json::Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(ApiError::validation("extra", "must be a JSON object").into()),
        };
        let command = ConversationCommand::EditMessage { message_id, content, metadata: metadata.map(|m| m.0), extra };
        run(ctx, &topic_id, owner_id.as_deref(), command, None).await
    }

    /// Delete a message (soft: the tree keeps its place).
    async fn delete_message(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        message_id: String,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        run(ctx, &topic_id, owner_id.as_deref(), ConversationCommand::DeleteMessage { message_id }, None).await
    }

    /// Choose a message's active branch (index among its non-tool children; equal to their
    /// count means "a new branch").
    async fn switch_branch(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        message_id: String,
        active_branch_index: i32,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let active_branch_index = u32::try_from(active_branch_index)
            .map_err(|_| ApiError::validation("activeBranchIndex", "must not be negative"))?;
        run(
            ctx,
            &topic_id,
            owner_id.as_deref(),
            ConversationCommand::SwitchBranch { message_id, active_branch_index },
            None,
        )
        .await
    }

    /// Open a thread off a message (`kind` `continuation` or `standalone`, …).
    #[allow(clippy::too_many_arguments)] // the command's fields and the owner are the GraphQL signature
    async fn create_thread(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        thread_id: String,
        source_message_id: String,
        kind: String,
        title: Option<String>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let kind: ThreadKind = from_wire("kind", &kind)?;
        run(
            ctx,
            &topic_id,
            owner_id.as_deref(),
            ConversationCommand::CreateThread { thread_id, source_message_id, kind, title },
            None,
        )
        .await
    }

    /// Compress messages behind a summary (upstream's compression group). The tree then shows
    /// one message `{id: groupId, role: "compressedGroup", content, compressedMessages (the
    /// members' own flatList), lastMessageId, pinnedMessages ([{content, createdAt, id, model,
    /// provider, role}] of the pinned members), metadata (when given), createdAt, updatedAt,
    /// topicId}` in the
    /// members' place, and a reply to the newest member hangs under it. Every message must be
    /// live, on the main line (no thread) and in no other group (CONFLICT); `pinnedMessageIds`
    /// are members; `groupId` is new among the topic's messages and groups (CONFLICT);
    /// `metadata` is a JSON object. NOT_FOUND for an unknown message or someone else's topic.
    // The arguments are upstream's group fields, one each.
    #[allow(clippy::too_many_arguments)]
    async fn compress_messages(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        group_id: String,
        message_ids: Vec<String>,
        content: String,
        pinned_message_ids: Option<Vec<String>>,
        metadata: Option<Json<Value>>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let group = NewMessageGroup {
            group_id,
            kind: Some(MessageGroupKind::Compression),
            message_ids,
            pinned_message_ids: pinned_message_ids.unwrap_or_default(),
            content: Some(content),
            metadata: metadata.map(|m| m.0),
            ..NewMessageGroup::default()
        };
        run(ctx, &topic_id, owner_id.as_deref(), ConversationCommand::CreateMessageGroup(group), None).await
    }

    /// Show sibling answers side by side (upstream's parallel group): at least two live main-line
    /// messages with the same parent, in no other group (CONFLICT). The tree passes the group
    /// to `parse` as a `messageGroups` entry `{id: groupId, mode: "compare", parentMessageId,
    /// title, description}` with each member's `groupId` naming it (in the tree, in place of a
    /// chat group's id) and their parent in compare mode (`metadata.compare: true`), so the
    /// members are the columns of one `compare` node; the conversation continues under the
    /// column whose `metadata.activeColumn` is true. NOT_FOUND for an unknown message or
    /// someone else's topic.
    #[allow(clippy::too_many_arguments)] // the command's fields and the owner are the GraphQL signature
    async fn create_parallel_group(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        group_id: String,
        message_ids: Vec<String>,
        title: Option<String>,
        description: Option<String>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        let group = NewMessageGroup {
            group_id,
            kind: Some(MessageGroupKind::Parallel),
            message_ids,
            title,
            description,
            ..NewMessageGroup::default()
        };
        run(ctx, &topic_id, owner_id.as_deref(), ConversationCommand::CreateMessageGroup(group), None).await
    }

    /// Remove a message group (upstream's cancelled compression): its members show again and
    /// may be grouped anew. NOT_FOUND when the topic has no such group.
    async fn remove_message_group(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        group_id: String,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<ConversationPayload> {
        run(ctx, &topic_id, owner_id.as_deref(), ConversationCommand::RemoveMessageGroup { group_id }, None).await
    }
}
