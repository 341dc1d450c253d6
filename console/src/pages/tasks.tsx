// Tasks: a board by status (live), and one task with its dependencies and subtask layers drawn
// as graphs, runs (topics with hand-offs and review scores), comments and documents; a task is
// run from its page.
import { useState } from "preact/hooks";
import { ApiError, gql, useLiveEvents, useQuery } from "../api";
import { pretty, when } from "../format";
import { DepGraph, type GraphEdge, type GraphNode } from "../depgraph";
import { runLink } from "../links";

const BOARD = `query($first: Int) { tasks(first: $first) { pageInfo { hasNextPage } nodes { taskId userId identifier name instruction status priority assigneeAgentId totalTopics updatedAt } } }`;
const TASK = `query($id: String!, $owner: String) {
  task(id: $id, ownerId: $owner) {
    taskId userId identifier name instruction description status priority assigneeAgentId automationMode heartbeatIntervalSecs
    nextHeartbeatAt schedulePattern totalTopics maxTopics consecutiveFailures error createdAt startedAt completedAt
    dependencies { taskId dependsOnId kind } dependants { taskId dependsOnId kind }
    layers { layers totalRunnable alreadyDone cycles blockedByCycle blockedExternally ineligible }
    topics(first: 100) { nodes { topicId seq operationId agentId status trigger handoff error reviewScore reviewPassed startedAt endedAt } }
    subtasks(first: 200) { nodes { taskId identifier status dependencies { dependsOnId kind } } }
    comments(first: 100) { nodes { commentId authorKind authorId content } }
    documents { documentId pinnedBy pinnedAt }
  }
}`;
const RUN = `mutation($id: String!, $topicId: String!, $operationId: String!, $owner: String) { runTask(id: $id, topicId: $topicId, operationId: $operationId, ownerId: $owner) { position } }`;

/** The console link to `owner`'s task `taskId` (task ids are per owner). */
export function taskLink(taskId: string, owner: string): string {
  return `/tasks/${encodeURIComponent(taskId)}?owner=${encodeURIComponent(owner)}`;
}

/** Board columns, in a task's usual order. */
const COLUMNS = ["backlog", "running", "paused", "completed", "failed", "canceled"];

/** The Tasks page: every status a column. */
export function Tasks() {
  const q = useQuery(BOARD, { first: 500 });
  useLiveEvents({ streamPrefix: "task" }, () => q.reload());
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const tasks: any[] = q.data?.tasks.nodes ?? [];
  const statuses = [...COLUMNS, ...new Set(tasks.map((t) => t.status).filter((s) => !COLUMNS.includes(s)))];
  return (
    <section>
      <h1>Tasks</h1>
      {q.data?.tasks.pageInfo.hasNextPage && <p>Showing the first 500 tasks.</p>}
      <div class="board">
        {statuses.map((s) => {
          const here = tasks.filter((t) => t.status === s);
          return (
            <section key={s} class="column" aria-label={s} data-column={s}>
              <h2>
                {s} <small>{here.length}</small>
              </h2>
              <ul>
                {here.map((t) => (
                  <li key={`${t.userId}/${t.taskId}`} data-task={t.taskId}>
                    <a href={taskLink(t.taskId, t.userId)}>{t.identifier}</a> {t.name ?? t.instruction}
                    <br />
                    <small>
                      {t.assigneeAgentId ?? "unassigned"} · {t.totalTopics} runs
                    </small>
                  </li>
                ))}
              </ul>
            </section>
          );
        })}
      </div>
    </section>
  );
}


/** The task between what it depends on (left) and what depends on it (right); they are named
 * in the task owner's namespace. */
function around(t: any): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const me: GraphNode = { id: t.taskId, label: t.identifier, status: t.status, column: t.dependencies.length ? 1 : 0 };
  const nodes: GraphNode[] = [me];
  const edges: GraphEdge[] = [];
  for (const d of t.dependencies) {
    nodes.push({ id: d.dependsOnId, label: `${d.dependsOnId} (${d.kind})`, href: taskLink(d.dependsOnId, t.userId), column: 0 });
    edges.push({ from: d.dependsOnId, to: t.taskId });
  }
  for (const d of t.dependants) {
    nodes.push({ id: d.taskId, label: `${d.taskId} (${d.kind})`, href: taskLink(d.taskId, t.userId), column: me.column + 1 });
    edges.push({ from: t.taskId, to: d.taskId });
  }
  return t.dependencies.length + t.dependants.length ? { nodes, edges } : { nodes: [], edges: [] };
}

/** The subtasks in their layers (done ones first, then each layer; blocked ones last), with
 * an arrow per `blocks` dependency between them. */
function subtaskGraph(t: any): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const l = t.layers;
  const done = l.alreadyDone.length ? 1 : 0;
  const column = new Map<string, number>();
  l.alreadyDone.forEach((id: string) => column.set(id, 0));
  l.layers.forEach((layer: string[], i: number) => layer.forEach((id) => column.set(id, i + done)));
  const last = l.layers.length + done;
  const subtasks: any[] = t.subtasks.nodes;
  const known = new Set(subtasks.map((s) => s.identifier));
  const nodes: GraphNode[] = subtasks.map((s) => ({
    id: s.taskId,
    label: s.identifier,
    status: s.status,
    href: taskLink(s.taskId, t.userId),
    column: column.get(s.identifier) ?? last,
  }));
  // Deeper descendants are in the layers by identifier only.
  for (const [id, c] of column) if (!known.has(id)) nodes.push({ id, label: id, column: c });
  const ids = new Set(subtasks.map((s) => s.taskId));
  const edges = subtasks.flatMap((s) =>
    s.dependencies.filter((d: any) => d.kind === "blocks" && ids.has(d.dependsOnId)).map((d: any) => ({ from: d.dependsOnId, to: s.taskId })),
  );
  return { nodes, edges };
}

/** One task. */
export function Task({ id, owner }: { id: string; owner?: string }) {
  const q = useQuery(TASK, { id, owner });
  // A task's stream names its owner (or is a global one from before): follow task streams.
  useLiveEvents({ streamPrefix: "task" }, () => q.reload());
  const [error, setError] = useState<string | null>(null);
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const t = q.data?.task;
  if (!t) return <p>Loading…</p>;
  const run = async () => {
    setError(null);
    const n = t.totalTopics + 1;
    const suffix = `${Date.now().toString(36)}`;
    try {
      await gql(RUN, { id: t.taskId, owner: t.userId, topicId: `${t.taskId}-topic-${n}-${suffix}`, operationId: `${t.taskId}-run-${n}-${suffix}` });
      q.reload();
    } catch (e) {
      setError(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
  };
  const layers = t.layers;
  return (
    <section>
      <h1>
        {t.identifier} <span class={`status s-${t.status}`}>{t.status}</span>
      </h1>
      <p>{t.instruction}</p>
      {t.description && <p>{t.description}</p>}
      <p class="actions">
        <button onClick={run}>Run now</button>
        <small>
          assignee {t.assigneeAgentId ?? "none"} · priority {t.priority} · created {when(t.createdAt)}
          {t.nextHeartbeatAt && <> · next heartbeat {when(t.nextHeartbeatAt)}</>}
        </small>
      </p>
      {error && <p role="alert" class="error">{error}</p>}
      {t.error && <p class="error">{t.error}</p>}
      <section aria-labelledby="deps">
        <h2 id="deps">Dependencies</h2>
        {t.dependencies.length + t.dependants.length === 0 && <p>No dependencies.</p>}
        <DepGraph label="Dependencies of this task" {...around(t)} />
        {layers.totalRunnable + layers.alreadyDone.length > 0 && (
          <>
            <h3>Subtask layers</h3>
            <DepGraph label="Subtasks by layer" {...subtaskGraph(t)} />
          </>
        )}
        {layers.cycles.length > 0 && <p class="error">Cycle: {layers.cycles.join(", ")}</p>}
      </section>
      <section aria-labelledby="topics">
        <h2 id="topics">Runs (topics)</h2>
        {t.topics.nodes.length === 0 && <p>Not run yet.</p>}
        <ol>
          {t.topics.nodes.map((tp: any) => (
            <li key={tp.topicId} data-topic={tp.topicId}>
              <a href={runLink(tp.operationId, t.userId)}>{tp.operationId}</a> <span class={`status s-${tp.status}`}>{tp.status}</span>{" "}
              <small>
                {tp.trigger} · {when(tp.startedAt)}
              </small>
              {tp.reviewScore != null && (
                <p class="scores" data-score={tp.reviewScore}>
                  Review score <strong>{tp.reviewScore}</strong>{" "}
                  {tp.reviewPassed != null && <span class={tp.reviewPassed ? "s-completed" : "s-failed"}>{tp.reviewPassed ? "passed" : "not passed"}</span>}
                </p>
              )}
              {tp.handoff && (
                <details open={tp.seq === t.totalTopics}>
                  <summary>Hand-off{tp.handoff.title ? `: ${tp.handoff.title}` : ""}</summary>
                  <pre>{pretty(tp.handoff)}</pre>
                </details>
              )}
              {tp.error && <p class="error">{tp.error}</p>}
            </li>
          ))}
        </ol>
      </section>
      <section aria-labelledby="comments">
        <h2 id="comments">Comments</h2>
        {t.comments.nodes.length === 0 && <p>No comments.</p>}
        <ul>
          {t.comments.nodes.map((c: any) => (
            <li key={c.commentId}>
              <small>
                {c.authorKind} {c.authorId}:
              </small>{" "}
              {c.content}
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="documents">
        <h2 id="documents">Documents</h2>
        {t.documents.length === 0 && <p>No documents.</p>}
        <ul>
          {t.documents.map((d: any) => (
            <li key={d.documentId}>
              {d.documentId} <small>
                pinned by {d.pinnedBy}, {when(d.pinnedAt)}
              </small>
            </li>
          ))}
        </ul>
      </section>
    </section>
  );
}
