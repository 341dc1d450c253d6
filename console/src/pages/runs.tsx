// Runs: the newest first, filtered, live (a run created or changed anywhere re-reads the page).
import { useState } from "preact/hooks";
import { useLiveEvents, useQuery } from "../api";
import { cost, count, duration, when } from "../format";
import { runLink } from "../links";
import { navigate, useLocation } from "../router";

const RUNS = `query($first: Int, $after: String, $filter: OperationFilterInput) {
  operations(first: $first, after: $after, filter: $filter) {
    pageInfo { hasNextPage endCursor }
    nodes { id userId status kind agentId model provider stepCount totalTokens costMicros createdAt startedAt completedAt completionReason parentOperationId }
  }
}`;

const STATUSES = ["idle", "running", "waiting_for_human", "waiting_for_async_tool", "done", "error", "interrupted", "cancelled"];
const KINDS = ["CONVERSATION", "SUBAGENT", "TOOL", "GROUP", "CLIENT_TASK", "TASK"];
const FILTERS = ["status", "kind", "agentId", "model", "createdFrom", "createdTo"] as const;

/** The filter in the URL's query (so a filtered view can be linked to). */
function filterFrom(url: URL): Record<string, string> {
  const f: Record<string, string> = {};
  for (const k of FILTERS) {
    const v = url.searchParams.get(k);
    if (v) f[k] = k.startsWith("created") ? new Date(v).toISOString() : v;
  }
  return f;
}

/** The Runs page. */
export function Runs() {
  const url = useLocation();
  const filter = filterFrom(url);
  const [after, setAfter] = useState<string | null>(null);
  const runs = useQuery(RUNS, { first: 50, after, filter });
  useLiveEvents({ streamPrefix: "operation" }, () => runs.reload());
  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    const q = new URLSearchParams();
    for (const k of FILTERS) {
      const v = String(form.get(k) ?? "").trim();
      if (v) q.set(k, v);
    }
    setAfter(null);
    navigate(`/runs${q.size ? `?${q}` : ""}`);
  };
  const rows = runs.data?.operations.nodes ?? [];
  return (
    <section>
      <h1>Runs</h1>
      <nav class="actions" aria-label="Common views">
        <a href="/runs">All</a>
        <a href="/runs?status=running">Running</a>
        <a href="/runs?status=waiting_for_human">Waiting for a human</a>
        <a href="/runs?status=error">Failed</a>
        <a href="/inbox">My inbox</a>
      </nav>
      <form class="filters" onSubmit={apply} aria-label="Filter runs">
        <label>
          Status
          <select name="status" value={url.searchParams.get("status") ?? ""}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <select name="kind" value={url.searchParams.get("kind") ?? ""}>
            <option value="">any</option>
            {KINDS.map((k) => (
              <option value={k}>{k.toLowerCase()}</option>
            ))}
          </select>
        </label>
        <label>
          Agent <input name="agentId" value={url.searchParams.get("agentId") ?? ""} size={12} />
        </label>
        <label>
          Model <input name="model" value={url.searchParams.get("model") ?? ""} size={12} />
        </label>
        <label>
          From <input type="datetime-local" name="createdFrom" value={url.searchParams.get("createdFrom") ?? ""} />
        </label>
        <label>
          To <input type="datetime-local" name="createdTo" value={url.searchParams.get("createdTo") ?? ""} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {runs.error && <p role="alert" class="error">{runs.error.message}</p>}
      <div class="scroll">
        <table class="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Kind</th>
              <th>Agent</th>
              <th>Model</th>
              <th class="num">Steps</th>
              <th class="num">Tokens</th>
              <th class="num">Cost</th>
              <th class="num">Duration</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r: any) => (
              <tr key={r.id} data-run={r.id}>
                <td>
                  <a href={runLink(r.id, r.userId)}>{r.id}</a>
                  {r.parentOperationId && <small> ↳ {r.parentOperationId}</small>}
                </td>
                <td>
                  <span class={`status s-${r.status}`}>{r.status}</span>
                  {r.completionReason && <small> {r.completionReason}</small>}
                </td>
                <td>{r.kind}</td>
                <td>{r.agentId}</td>
                <td>{r.model ?? "–"}</td>
                <td class="num">{r.stepCount}</td>
                <td class="num">{count(r.totalTokens)}</td>
                <td class="num">{cost(r.costMicros)}</td>
                <td class="num">{duration(r.startedAt ?? r.createdAt, r.completedAt)}</td>
                <td>{when(r.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!runs.loading && rows.length === 0 && <p>No runs match.</p>}
      <nav class="pager">
        {after && <button onClick={() => setAfter(null)}>Newest</button>}
        {runs.data?.operations.pageInfo.hasNextPage && (
          <button onClick={() => setAfter(runs.data.operations.pageInfo.endCursor)}>Older</button>
        )}
      </nav>
    </section>
  );
}
