// The log: the live event tail with filters, and one causal chain as a tree ("why does this
// exist?": from the source to everything it caused).
import { useState } from "preact/hooks";
import { useLiveEvents, useQuery } from "../api";
import { pretty, when } from "../format";
import { navigate, useLocation } from "../router";

const RECENT = `query($after: String, $filter: EventFilterInput) {
  headPosition
  events(after: $after, first: 200, filter: $filter) { nodes { position eventType streamId eventId rootSourceId recordedAt payload userId } }
}`;
const HEAD = `{ headPosition }`;
const CHAIN = `query($root: UUID!) { chain(rootSourceId: $root, first: 500) { position eventType streamId eventId parentNodeId recordedAt payload userId } }`;

type Ev = { position: number; eventType: string; streamId: string; eventId: string; rootSourceId?: string; parentNodeId?: string; recordedAt: string; payload: unknown };

function EventLine({ e }: { e: Ev }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class="pos">#{e.position}</span> <strong>{e.eventType}</strong> <code>{e.streamId}</code> <small>{when(e.recordedAt)}</small>
      </button>
      {open && <pre>{pretty(e.payload)}</pre>}
    </>
  );
}

function ChainTree({ root }: { root: string }) {
  const q = useQuery<{ chain: Ev[] }>(CHAIN, { root });
  if (q.error) return <p role="alert" class="error">{q.error.message}</p>;
  if (!q.data) return <p>Loading…</p>;
  const byParent = new Map<string, Ev[]>();
  const ids = new Set(q.data.chain.map((e) => e.eventId));
  const tops: Ev[] = [];
  for (const e of q.data.chain) {
    if (e.parentNodeId && ids.has(e.parentNodeId)) {
      byParent.set(e.parentNodeId, [...(byParent.get(e.parentNodeId) ?? []), e]);
    } else tops.push(e);
  }
  const render = (e: Ev) => (
    <li key={e.eventId} data-event={e.eventType}>
      <EventLine e={e} />
      {byParent.has(e.eventId) && <ul class="tree">{byParent.get(e.eventId)!.map(render)}</ul>}
    </li>
  );
  return (
    <section aria-labelledby="chain">
      <h2 id="chain">
        Chain of <code>{root}</code>
      </h2>
      <ul class="tree">{tops.map(render)}</ul>
    </section>
  );
}

function Tail({ filter }: { filter: Record<string, unknown> }) {
  const head = useQuery<{ headPosition: number }>(HEAD);
  const after = head.data ? String(Math.max(0, head.data.headPosition - 500)) : null;
  const recent = useQuery(RECENT, { after, filter });
  const [live, setLive] = useState<Ev[]>([]);
  useLiveEvents(filter, (e) => e && setLive((l) => [e, ...l].slice(0, 500)));
  const seen = new Set(live.map((e) => e.position));
  const older: Ev[] = (recent.data?.events.nodes ?? []).filter((e: Ev) => !seen.has(e.position)).reverse();
  const rows = [...live, ...older];
  return (
    <ol class="timeline" aria-label="Events, newest first">
      {rows.map((e) => (
        <li key={e.position} data-event={e.eventType}>
          <EventLine e={e} /> <a href={`/log?root=${e.rootSourceId}`}>why?</a>
        </li>
      ))}
    </ol>
  );
}

/** The Log page. */
export function Log() {
  const url = useLocation();
  const root = url.searchParams.get("root");
  const types = url.searchParams.get("types");
  const stream = url.searchParams.get("stream");
  const filter: Record<string, unknown> = {};
  if (types) filter.eventTypes = types.split(",").map((t) => t.trim()).filter(Boolean);
  if (stream) filter.streamPrefix = stream;
  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    const q = new URLSearchParams();
    for (const k of ["types", "stream"]) {
      const v = String(form.get(k) ?? "").trim();
      if (v) q.set(k, v);
    }
    navigate(`/log${q.size ? `?${q}` : ""}`);
  };
  return (
    <section>
      <h1>Log</h1>
      {root ? (
        <>
          <p>
            <a href="/log">Back to the tail</a>
          </p>
          <ChainTree root={root} />
        </>
      ) : (
        <>
          <form class="filters" onSubmit={apply} aria-label="Filter events">
            <label>
              Event types <input name="types" value={types ?? ""} placeholder="operation.started, brief.created" size={30} />
            </label>
            <label>
              Stream prefix <input name="stream" value={stream ?? ""} placeholder="operation-" size={16} />
            </label>
            <button type="submit">Filter</button>
          </form>
          <Tail key={JSON.stringify(filter)} filter={filter} />
        </>
      )}
    </section>
  );
}
