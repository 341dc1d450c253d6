//! The GraphQL schema: queries over the read models and the log, mutations for the domain's
//! commands, subscriptions over the log. Resolvers are thin: parse, call a use case or a
//! read-model query, map the result.

pub mod admin;
pub mod admission;
pub mod agents;
pub mod analytics;
pub mod batch;
pub mod briefs;
pub mod budgets;
pub mod changes;
pub mod conversation_tree;
pub mod conversations;
pub mod cost;
pub mod cron_jobs;
pub mod durations;
pub mod events;
pub mod global_id;
pub mod groups;
pub mod hooks;
pub mod message_deltas;
pub mod node;
pub mod notifications;
pub mod operation_inputs;
pub mod operation_mutations;
pub mod operations;
pub mod origins;
mod paging;
pub mod parsed;
pub mod raw_json;
mod request;
pub mod snapshot;
pub mod sources;
pub(crate) mod subscribers;
pub mod task_mutations;
pub mod tasks;
pub mod variables;
mod wire;

use async_graphql::{MergedObject, MergedSubscription, Schema};

pub use paging::{connection, page_request, page_size};
pub use request::{app, caller, node_after, reads};
pub use subscribers::{Subscriber, admit_subscriber};
pub use wire::{decode, from_wire, json, wire};

use crate::state::AppState;

/// All queries.
#[derive(MergedObject, Default)]
pub struct Query(
    events::EventsQuery,
    operations::OperationsQuery,
    tasks::TasksQuery,
    briefs::BriefsQuery,
    notifications::NotificationsQuery,
    conversations::ConversationsQuery,
    agents::AgentsQuery,
    groups::GroupsQuery,
    cron_jobs::CronJobsQuery,
    admin::AdminQuery,
    node::NodeQuery,
    analytics::AnalyticsQueryRoot,
    admin::AdminQuery,
    budgets::BudgetsQuery,
);

/// All mutations.
#[derive(MergedObject, Default)]
pub struct Mutation(
    operation_mutations::OperationsMutation,
    task_mutations::TasksMutation,
    briefs::BriefsMutation,
    notifications::NotificationsMutation,
    conversations::ConversationsMutation,
    agents::AgentsMutation,
    groups::GroupsMutation,
    cron_jobs::CronJobsMutation,
    sources::SourcesMutation,
    admin::AdminMutation,
    budgets::BudgetsMutation,
    batch::BatchMutation,
);

/// All subscriptions.
#[derive(MergedSubscription, Default)]
pub struct Subscription(events::EventsSubscription, changes::ChangesSubscription, message_deltas::DeltasSubscription);

/// The schema type.
pub type AppSchema = Schema<Query, Mutation, Subscription>;

/// Build the schema with the application state and limits.
pub fn build_schema(state: AppState) -> AppSchema {
    let limits = state.limits.clone();
    let parsed = std::sync::Arc::clone(&state.parsed);
    Schema::build(Query::default(), Mutation::default(), Subscription::default())
        .data(state)
        // Admission refuses a non-introspection document past `max_depth`; the engine's own
        // check only has to let introspection's allowance through.
        .limit_depth(limits.max_depth.max(limits.max_introspection_depth))
        .limit_complexity(limits.max_complexity)
        .extension(hooks::Hooks::new(admission::Admission(limits.clone(), parsed)))
        .finish()
}

/// The schema's SDL, as checked in at `api/schema.graphql`.
pub fn sdl() -> String {
    Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish().sdl()
}
