// Schedules: cron jobs (enabled or not, toggled here, with their next fire) and tasks that run
// on a heartbeat or a schedule, with their next heartbeat.
import { useState } from "preact/hooks";
import { gql, useLiveEvents, useQuery } from "../api";
import { when } from "../format";
import { taskLink } from "./tasks";

const SCHEDULES = `{
  cronJobs(first: 200) { nodes { jobId agentId name pattern timezone content enabled remainingExecutions lastExecutedAt nextFireAt totalExecutions } }
  tasks(first: 500) { nodes { taskId userId identifier name instruction status automationMode heartbeatIntervalSecs nextHeartbeatAt lastHeartbeatAt schedulePattern scheduleTimezone } }
}`;
const ENABLE = `mutation($id: String!) { enableCronJob(id: $id) { position } }`;
const DISABLE = `mutation($id: String!) { disableCronJob(id: $id) { position } }`;

/** The Schedules page. */
export function Schedules() {
  const q = useQuery(SCHEDULES);
  useLiveEvents({ streamPrefix: "cron-" }, () => q.reload());
  useLiveEvents({ streamPrefix: "task-" }, () => q.reload());
  const [error, setError] = useState<string | null>(null);
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  if (!q.data) return <p>Loading…</p>;
  const toggle = async (job: any) => {
    setError(null);
    try {
      await gql(job.enabled ? DISABLE : ENABLE, { id: job.jobId });
      q.reload();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const scheduled = q.data.tasks.nodes.filter((t: any) => t.heartbeatIntervalSecs || t.schedulePattern);
  return (
    <section>
      <h1>Schedules</h1>
      {error && <p role="alert" class="error">{error}</p>}
      <h2>Cron jobs</h2>
      {q.data.cronJobs.nodes.length === 0 && <p>No cron jobs.</p>}
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Job</th>
              <th>Agent</th>
              <th>Pattern</th>
              <th>Last fired</th>
              <th>Next fire</th>
              <th class="num">Fires</th>
              <th class="num">Left</th>
              <th>Enabled</th>
            </tr>
          </thead>
          <tbody>
            {q.data.cronJobs.nodes.map((j: any) => (
              <tr key={j.jobId} data-job={j.jobId}>
                <td>
                  {j.name ?? j.jobId}
                  <br />
                  <small>{j.content}</small>
                </td>
                <td>{j.agentId}</td>
                <td>
                  <code>{j.pattern}</code> <small>{j.timezone}</small>
                </td>
                <td>{when(j.lastExecutedAt)}</td>
                <td data-next-fire={j.nextFireAt ?? ""}>{j.enabled ? when(j.nextFireAt) : "–"}</td>
                <td class="num">{j.totalExecutions}</td>
                <td class="num">{j.remainingExecutions ?? "∞"}</td>
                <td>
                  <button aria-pressed={j.enabled} onClick={() => toggle(j)}>
                    {j.enabled ? "Enabled" : "Disabled"}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Tasks on a heartbeat or a schedule</h2>
      {scheduled.length === 0 && <p>No task runs on its own.</p>}
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Task</th>
              <th>Status</th>
              <th>Every</th>
              <th>Last heartbeat</th>
              <th>Next heartbeat</th>
              <th>Schedule</th>
            </tr>
          </thead>
          <tbody>
            {scheduled.map((t: any) => (
              <tr key={t.taskId}>
                <td>
                  <a href={taskLink(t.taskId, t.userId)}>{t.identifier}</a> {t.name ?? t.instruction}
                </td>
                <td>{t.status}</td>
                <td>{t.heartbeatIntervalSecs ? `${t.heartbeatIntervalSecs} s` : "–"}</td>
                <td>{when(t.lastHeartbeatAt)}</td>
                <td>{when(t.nextHeartbeatAt)}</td>
                <td>
                  {t.schedulePattern ? (
                    <>
                      <code>{t.schedulePattern}</code> <small>{t.scheduleTimezone}</small>
                    </>
                  ) : (
                    "–"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
