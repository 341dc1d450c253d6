//! What a task's completion does to the tasks it blocked (upstream `cascadeOnCompletion`): the
//! dependants [`crate::tasks::graph::cascade_on_completion`] releases are started (the api's task
//! cascade reactor runs them), and one held by an upstream of unknown state is reported to its
//! owner, once per completion, by [`held_notification`].

use serde_json::json;

use crate::notifications::CreateNotification;
use crate::tasks::graph::HeldDependant;

/// The notification telling `owner` that `held` was not started when `completed_task_id`
/// completed, because some of its upstreams are of unknown state. Keyed on the completion's
/// event and the dependant, so reacting twice notifies once.
pub fn held_notification(
    owner: &str,
    completed_task_id: &str,
    completion_event_id: &str,
    held: &HeldDependant,
) -> CreateNotification {
    CreateNotification {
        user_id: owner.to_string(),
        category: "task".into(),
        notification_type: "task_held".into(),
        title: format!("Task {} is still waiting", held.task_id),
        body: format!(
            "Task {completed_task_id} completed, but {} was not started: the state of {} is unknown.",
            held.task_id,
            held.unknown_upstreams.join(", ")
        ),
        dedupe_key: Some(format!("task-held:{completion_event_id}:{}", held.task_id)),
        action_url: None,
        metadata: Some(json!({
            "taskId": held.task_id,
            "completedTaskId": completed_task_id,
            "unknownUpstreams": held.unknown_upstreams,
        })),
    }
}

/// The notification telling `owner` that `task_id`, released by `completed_task_id`'s
/// completion, could not be started (`reason`: the run's refusal). Keyed like
/// [`held_notification`].
pub fn start_failed_notification(
    owner: &str,
    completed_task_id: &str,
    completion_event_id: &str,
    task_id: &str,
    reason: &str,
) -> CreateNotification {
    CreateNotification {
        user_id: owner.to_string(),
        category: "task".into(),
        notification_type: "task_start_failed".into(),
        title: format!("Task {task_id} could not start"),
        body: format!(
            "Task {completed_task_id} completed, but {task_id} could not be started: {reason}"
        ),
        dedupe_key: Some(format!("task-start-failed:{completion_event_id}:{task_id}")),
        action_url: None,
        metadata: Some(
            json!({"taskId": task_id, "completedTaskId": completed_task_id, "reason": reason}),
        ),
    }
}
