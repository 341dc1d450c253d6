// Tasks: a board by status (live), and one task with its dependencies, subtask layers, runs
// (topics with hand-offs), comments and documents; a task is run from its page.
import { useState } from "preact/hooks";
import { ApiError, gql, useLiveEvents, useQuery } from "../api";
import { pretty, when } from "../format";

const BOARD = `query($first: Int) { tasks(first: $first) { pageInfo { hasNextPage } nodes { taskId identifier name instruction status priority assigneeAgentId totalTopics updatedAt } } }`;
const TASK = `query($id: String!) {
  task(id: $id) {
    taskId identifier name instruction description status priority assigneeAgentId automationMode heartbeatIntervalSecs
    nextHeartbeatAt schedulePattern totalTopics maxTopics consecutiveFailures error createdAt startedAt completedAt
    dependencies { taskId dependsOnId kind } dependants { taskId dependsOnId kind }
    layers { layers totalRunnable alreadyDone cycles blockedByCycle blockedExternally ineligible }
    topics(first: 100) { nodes { topicId seq operationId agentId status trigger handoff error } }
    comments(first: 100) { nodes { commentId authorKind authorId content } }
    documents { documentId pinnedBy pinnedAt }
  }
}`;
const RUN = `mutation($id: String!, $topicId: String!, $operationId: String!) { runTask(id: $id, topicId: $topicId, operationId: $operationId) { position } }`;

/** Board columns, in a task's usual order. */
const COLUMNS = ["backlog", "running", "paused", "completed", "failed", "canceled"];

/** The Tasks page: every status a column. */
export function Tasks() {
  const q = useQuery(BOARD, { first: 500 });
  useLiveEvents({ streamPrefix: "task-" }, () => q.reload());
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
                  <li key={t.taskId} data-task={t.taskId}>
                    <a href={`/tasks/${encodeURIComponent(t.taskId)}`}>{t.identifier}</a> {t.name ?? t.instruction}
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

/** One task. */
export function Task({ id }: { id: string }) {
  const q = useQuery(TASK, { id });
  useLiveEvents({ streamPrefix: `task-${id}` }, () => q.reload());
  const [error, setError] = useState<string | null>(null);
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const t = q.data?.task;
  if (!t) return <p>Loading…</p>;
  const run = async () => {
    setError(null);
    const n = t.totalTopics + 1;
    const suffix = `${Date.now().toString(36)}`;
    try {
      await gql(RUN, { id: t.taskId, topicId: `${t.taskId}-topic-${n}-${suffix}`, operationId: `${t.taskId}-run-${n}-${suffix}` });
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
        <div class="graph">
          <ul aria-label="Depends on">
            {t.dependencies.length === 0 && <li>nothing</li>}
            {t.dependencies.map((d: any) => (
              <li key={d.dependsOnId}>
                <a href={`/tasks/${encodeURIComponent(d.dependsOnId)}`}>{d.dependsOnId}</a> <small>{d.kind}</small>
              </li>
            ))}
          </ul>
          <span aria-hidden="true">→</span>
          <strong>{t.identifier}</strong>
          <span aria-hidden="true">→</span>
          <ul aria-label="Depended on by">
            {t.dependants.length === 0 && <li>nothing</li>}
            {t.dependants.map((d: any) => (
              <li key={d.taskId}>
                <a href={`/tasks/${encodeURIComponent(d.taskId)}`}>{d.taskId}</a> <small>{d.kind}</small>
              </li>
            ))}
          </ul>
        </div>
        {layers.totalRunnable > 0 && (
          <>
            <h3>Subtask layers</h3>
            <ol>
              {layers.layers.map((l: string[], i: number) => (
                <li key={i}>{l.join(", ")}</li>
              ))}
            </ol>
          </>
        )}
        {layers.cycles.length > 0 && <p class="error">Cycle: {layers.cycles.join(", ")}</p>}
      </section>
      <section aria-labelledby="topics">
        <h2 id="topics">Runs</h2>
        {t.topics.nodes.length === 0 && <p>Not run yet.</p>}
        <ol>
          {t.topics.nodes.map((tp: any) => (
            <li key={tp.topicId} data-topic={tp.topicId}>
              <a href={`/runs/${encodeURIComponent(tp.operationId)}`}>{tp.operationId}</a> <span class={`status s-${tp.status}`}>{tp.status}</span>{" "}
              <small>{tp.trigger}</small>
              {tp.handoff && <pre>{pretty(tp.handoff)}</pre>}
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
