// A run: its figures, timeline (every event of its stream), the card it waits on, its
// sub-agents as a tree, plan, todos, artifacts, scores, the config it ran under, and a
// position slider showing its state at any event (`stateAt`, a replay of its stream).
import { useEffect, useState } from "preact/hooks";
import { gql, useQuery, useSubscription } from "../api";
import { CardForm, type Card } from "../card";
import { cost, count, duration, pretty, when } from "../format";

const RUN = `query($id: String!) {
  operation(id: $id) {
    id userId status phase kind completionReason agentId agentConfigVersion model provider topicId taskId trigger
    instruction parentOperationId childIds stepCount inputTokens outputTokens totalTokens costMicros toolCalls
    leaseWorkerId pendingCard plan todos error createdAt startedAt completedAt agentConfig artifacts scores asyncResults
    origin { path { position eventType streamId } }
    steps(first: 200) { nodes { stepIndex phase toolCalls toolCallCount totalTokens costMicros at position } }
    cards { cardId kind title outcome answer askedAt closedAt waitedMs }
    history(first: 500) { position eventType recordedAt payload rootSourceId eventId }
  }
}`;
/** The fields the slider shows, read from `stateAt`. */
export const STATE_FIELDS = "status phase stepCount totalTokens costMicros toolCalls pendingCard plan todos completionReason";
const STATE_AT = `query($id: String!, $p: Int!) { operation(id: $id) { stateAt(position: $p) { ${STATE_FIELDS} } } }`;
const CHANGED = `subscription($id: String!) { operationChanged(id: $id) { position eventType } }`;
const CHILDREN = `query($id: String!) { operation(id: $id) { children(first: 100) { nodes { id status kind agentId childIds } } } }`;

/** One sub-agent and its own children, read when shown. */
function SubTree({ id }: { id: string }) {
  const q = useQuery(CHILDREN, { id });
  const kids = q.data?.operation.children.nodes ?? [];
  if (kids.length === 0) return null;
  return (
    <ul class="tree">
      {kids.map((k: any) => (
        <li key={k.id}>
          <a href={`/runs/${encodeURIComponent(k.id)}`}>{k.id}</a> <span class={`status s-${k.status}`}>{k.status}</span>{" "}
          <small>
            {k.kind} · {k.agentId}
          </small>
          {k.childIds.length > 0 && <SubTree id={k.id} />}
        </li>
      ))}
    </ul>
  );
}

/** The state at the slider's position. */
function Replay({ id, positions }: { id: string; positions: number[] }) {
  const [index, setIndex] = useState(positions.length - 1);
  const at = positions[Math.min(index, positions.length - 1)];
  // The state shown and the position it is for (the slider may move on before it arrives).
  const [shown, setShown] = useState<{ at: number; state: unknown } | null>(null);
  useEffect(() => {
    let live = true;
    gql(STATE_AT, { id, p: at }).then((d) => live && setShown({ at, state: d.operation.stateAt }));
    return () => {
      live = false;
    };
  }, [id, at]);
  return (
    <section aria-labelledby="replay">
      <h2 id="replay">State at a position</h2>
      <label class="slider">
        Position <output data-position>{at}</output>
        <input
          type="range"
          min={0}
          max={positions.length - 1}
          value={index}
          aria-label="Event position"
          onInput={(e) => setIndex(Number((e.target as HTMLInputElement).value))}
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
export function Run({ id }: { id: string }) {
  const run = useQuery(RUN, { id });
  useSubscription(CHANGED, { id }, () => run.reload());
  const [open, setOpen] = useState<number | null>(null);
  if (run.error && !run.data) return <p role="alert" class="error">{run.error.message}</p>;
  const o = run.data?.operation;
  if (!o) return <p>Loading…</p>;
  const positions: number[] = o.history.map((e: any) => e.position);
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
              <a href={`/runs/${encodeURIComponent(o.parentOperationId)}`}>{o.parentOperationId}</a>
            </dd>
          </>
        )}
        {o.topicId && (
          <>
            <dt>Messages</dt>
            <dd>
              <a href={`/conversations/${encodeURIComponent(o.topicId)}`}>conversation {o.topicId}</a>
            </dd>
          </>
        )}
        {o.taskId && (
          <>
            <dt>Task</dt>
            <dd>
              <a href={`/tasks/${encodeURIComponent(o.taskId)}`}>{o.taskId}</a>
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
          <CardForm operationId={o.id} card={o.pendingCard.card as Card} onAnswered={run.reload} />
        </section>
      )}
      {o.error && <Json title="Error" value={o.error} />}
      {o.childIds.length > 0 && (
        <section aria-labelledby="children">
          <h2 id="children">Sub-agents</h2>
          <SubTree id={o.id} />
        </section>
      )}
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline</h2>
        <ol class="timeline">
          {o.history.map((e: any, i: number) => (
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
      </section>
      {positions.length > 0 && <Replay key={positions.length} id={o.id} positions={positions} />}
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
