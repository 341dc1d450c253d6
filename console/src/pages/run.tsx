// A run: its figures, timeline (its stream, a page at a time), the card it waits on, its
// sub-agents as a tree, plan, todos, artifacts, scores, the config it ran under, and a
// position slider over its whole stream showing its state at any event (`stateAt`, a replay).
import { useEffect, useState } from "preact/hooks";
import { gql, useQuery, useSubscription } from "../api";
import { CardForm, type Card } from "../card";
import { cost, count, duration, pretty, when } from "../format";
import { runLink } from "../links";
import { topicHref } from "./conversations";
import { taskLink } from "./tasks";

/** Timeline events read per page. */
const PAGE = 200;
const RUN = `query($id: String!, $owner: String) {
  operation(id: $id, ownerId: $owner) {
    id userId status phase kind completionReason agentId agentConfigVersion model provider topicId taskId trigger
    instruction parentOperationId childIds stepCount inputTokens outputTokens totalTokens costMicros toolCalls
    leaseWorkerId pendingCard plan todos error createdAt startedAt completedAt agentConfig artifacts scores asyncResults
    origin { path { position eventType streamId } }
    steps(first: 200) { nodes { stepIndex phase toolCalls toolCallCount totalTokens costMicros at position } }
    cards { cardId kind title outcome answer askedAt closedAt waitedMs }
    historyLength
    history(first: ${PAGE}) { position streamVersion eventType recordedAt payload rootSourceId eventId }
  }
}`;
const MORE = `query($id: String!, $owner: String, $after: Int!) { operation(id: $id, ownerId: $owner) { history(first: ${PAGE}, afterVersion: $after) { position streamVersion eventType recordedAt payload rootSourceId eventId } } }`;
const POSITION = `query($id: String!, $owner: String, $after: Int!) { operation(id: $id, ownerId: $owner) { history(first: 1, afterVersion: $after) { position } } }`;
/** The fields the slider shows, read from `stateAt`. */
export const STATE_FIELDS = "status phase stepCount totalTokens costMicros toolCalls pendingCard plan todos completionReason";
const STATE_AT = `query($id: String!, $owner: String, $p: Int!) { operation(id: $id, ownerId: $owner) { stateAt(position: $p) { ${STATE_FIELDS} } } }`;
const CHANGED = `subscription($id: String!, $owner: String) { operationChanged(id: $id, ownerId: $owner) { position eventType } }`;
const CHILDREN = `query($id: String!, $owner: String) { operation(id: $id, ownerId: $owner) { children(first: 100) { nodes { id status kind agentId childIds } } } }`;

/** One sub-agent of `owner`'s and its own children (theirs too), read when shown. */
function SubTree({ id, owner }: { id: string; owner: string }) {
  const q = useQuery(CHILDREN, { id, owner });
  const kids = q.data?.operation.children.nodes ?? [];
  if (kids.length === 0) return null;
  return (
    <ul class="tree">
      {kids.map((k: any) => (
        <li key={k.id}>
          <a href={runLink(k.id, owner)}>{k.id}</a> <span class={`status s-${k.status}`}>{k.status}</span>{" "}
          <small>
            {k.kind} · {k.agentId}
          </small>
          {k.childIds.length > 0 && <SubTree id={k.id} owner={owner} />}
        </li>
      ))}
    </ul>
  );
}

/** The state at the slider's position: the slider runs over every stream version; a
 * version's global position comes from the loaded timeline or, beyond it, from one read. */
function Replay({ id, owner, length, known }: { id: string; owner?: string; length: number; known: Map<number, number> }) {
  const [version, setVersion] = useState(length);
  // The state shown and the position it is for (the slider may move on before it arrives).
  const [shown, setShown] = useState<{ at: number; state: unknown } | null>(null);
  useEffect(() => {
    let live = true;
    const position = known.has(version)
      ? Promise.resolve(known.get(version)!)
      : gql(POSITION, { id, owner, after: version - 1 }).then((d) => d.operation.history[0]?.position as number);
    position
      .then((at) => gql(STATE_AT, { id, owner, p: at }).then((d) => live && setShown({ at, state: d.operation.stateAt })))
      .catch(() => live && setShown(null));
    return () => {
      live = false;
    };
  }, [id, version]);
  return (
    <section aria-labelledby="replay">
      <h2 id="replay">State at a position</h2>
      <label class="slider">
        Event <output data-version>{version}</output> of {length}, position <output data-position>{shown?.at ?? "…"}</output>
        <input
          type="range"
          min={1}
          max={length}
          value={version}
          aria-label="Event position"
          onInput={(e) => setVersion(Number((e.target as HTMLInputElement).value))}
        />
      </label>
      {shown ? <pre data-state={shown.at}>{pretty(shown.state)}</pre> : <p>Loading…</p>}
    </section>
  );
}

function Json({ title, value }: { title: string; value: unknown }) {
  const empty = value == null || (Array.isArray(value) && value.length === 0);
  return (
    <details open={!empty}>
      <summary>{title}</summary>
      {empty ? <p>none</p> : <pre>{pretty(value)}</pre>}
    </details>
  );
}

/** The Run page. */
export function Run({ id, owner }: { id: string; owner?: string }) {
  const run = useQuery(RUN, { id, owner });
  useSubscription(CHANGED, { id, owner }, () => run.reload());
  const [open, setOpen] = useState<number | null>(null);
  // Pages after the first, read on "Load more" (events never change, so they stay valid).
  const [more, setMore] = useState<{ id: string; events: any[] }>({ id, events: [] });
  const [loading, setLoading] = useState(false);
  if (run.error && !run.data) return <p role="alert" class="error">{run.error.message}</p>;
  const o = run.data?.operation;
  if (!o) return <p>Loading…</p>;
  const first: any[] = o.history;
  const extra = more.id === id ? more.events.filter((e) => e.streamVersion > (first.at(-1)?.streamVersion ?? 0)) : [];
  const history = [...first, ...extra];
  const known = new Map<number, number>(history.map((e) => [e.streamVersion, e.position]));
  const length: number = o.historyLength ?? history.length;
  const loadMore = async () => {
    setLoading(true);
    try {
      const d = await gql(MORE, { id, owner, after: history.at(-1)?.streamVersion ?? 0 });
      setMore({ id, events: [...extra, ...d.operation.history] });
    } finally {
      setLoading(false);
    }
  };
  return (
    <section>
      <h1>
        Run <code>{o.id}</code> <span class={`status s-${o.status}`}>{o.status}</span>
      </h1>
      <dl class="facts">
        <dt>Agent</dt>
        <dd>
          {o.agentId} v{o.agentConfigVersion ?? "?"}
        </dd>
        <dt>Model</dt>
        <dd>
          {o.model ?? "–"} {o.provider && <small>({o.provider})</small>}
        </dd>
        <dt>Kind</dt>
        <dd>{o.kind}</dd>
        <dt>Phase</dt>
        <dd>{o.phase ?? "–"}</dd>
        <dt>Steps</dt>
        <dd>{o.stepCount}</dd>
        <dt>Tokens</dt>
        <dd>
          {count(o.totalTokens)} <small>({count(o.inputTokens)} in, {count(o.outputTokens)} out)</small>
        </dd>
        <dt>Cost</dt>
        <dd>{cost(o.costMicros)}</dd>
        <dt>Duration</dt>
        <dd>{duration(o.startedAt ?? o.createdAt, o.completedAt)}</dd>
        <dt>Created</dt>
        <dd>{when(o.createdAt)}</dd>
        {o.completionReason && (
          <>
            <dt>Ended</dt>
            <dd>{o.completionReason}</dd>
          </>
        )}
        {o.parentOperationId && (
          <>
            <dt>Parent</dt>
            <dd>
              <a href={runLink(o.parentOperationId, o.userId)}>{o.parentOperationId}</a>
            </dd>
          </>
        )}
        {o.topicId && (
          <>
            <dt>Messages</dt>
            <dd>
              <a href={topicHref(o.topicId, o.userId)}>conversation {o.topicId}</a>
            </dd>
          </>
        )}
        {o.taskId && (
          <>
            <dt>Task</dt>
            <dd>
              <a href={taskLink(o.taskId, o.userId)}>{o.taskId}</a>
            </dd>
          </>
        )}
        {o.trigger && (
          <>
            <dt>Trigger</dt>
            <dd>{o.trigger}</dd>
          </>
        )}
      </dl>
      {o.pendingCard && o.status === "waiting_for_human" && (
        <section aria-labelledby="waiting">
          <h2 id="waiting">Waiting for you</h2>
          <CardForm operationId={o.id} owner={o.userId} card={o.pendingCard.card as Card} onAnswered={run.reload} />
        </section>
      )}
      {o.error && <Json title="Error" value={o.error} />}
      {o.childIds.length > 0 && (
        <section aria-labelledby="children">
          <h2 id="children">Sub-agents</h2>
          <SubTree id={o.id} owner={o.userId} />
        </section>
      )}
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline</h2>
        <p>
          <small data-timeline-shown>
            {history.length} of {length} events
          </small>
        </p>
        <ol class="timeline">
          {history.map((e: any, i: number) => (
            <li key={e.position} data-event={e.eventType}>
              <button class="link" aria-expanded={open === i} onClick={() => setOpen(open === i ? null : i)}>
                <span class="pos">#{e.position}</span> <strong>{e.eventType}</strong> <small>{when(e.recordedAt)}</small>
              </button>
              {open === i && (
                <div class="event">
                  <pre>{pretty(e.payload)}</pre>
                  <a href={`/log?root=${e.rootSourceId}`}>Why does this exist? (its chain)</a>
                </div>
              )}
            </li>
          ))}
        </ol>
        {history.length < length && (
          <button onClick={loadMore} disabled={loading}>
            Load {Math.min(PAGE, length - history.length)} more
          </button>
        )}
      </section>
      {length > 0 && <Replay key={`${id}:${length}`} id={o.id} owner={o.userId} length={length} known={known} />}
      <section aria-labelledby="steps">
        <h2 id="steps">Steps</h2>
        {o.steps.nodes.length === 0 && <p>No steps recorded.</p>}
        <ol class="steps">
          {o.steps.nodes.map((s: any) => (
            <li key={s.stepIndex}>
              <strong>
                Step {s.stepIndex} · {s.phase}
              </strong>{" "}
              <small>
                #{s.position} · {count(s.totalTokens)} tokens · {cost(s.costMicros)} · {s.toolCallCount} tool calls
              </small>
              {s.toolCallCount > 0 && <Json title="Tool calls" value={s.toolCalls} />}
            </li>
          ))}
        </ol>
      </section>
      <section aria-labelledby="cards">
        <h2 id="cards">Cards</h2>
        {o.cards.length === 0 ? (
          <p>No cards asked.</p>
        ) : (
          <ul>
            {o.cards.map((c: any) => (
              <li key={c.cardId}>
                {c.title} <small>({c.kind})</small> — {c.outcome}
                {c.answer && <code> {JSON.stringify(c.answer)}</code>}
              </li>
            ))}
          </ul>
        )}
      </section>
      <Json title="Plan" value={o.plan} />
      <Json title="Todos" value={o.todos} />
      <Json title="Artifacts" value={o.artifacts} />
      <Json title="Scores" value={o.scores} />
      <Json title="Results delivered" value={o.asyncResults} />
      <Json title="Origin" value={o.origin} />
      <Json title="Agent config" value={o.agentConfig} />
    </section>
  );
}
