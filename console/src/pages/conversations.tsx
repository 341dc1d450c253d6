// Conversations: the list, and one topic rendered from its `flatList` (upstream's shape:
// messages, assistant groups with their tool chains, branches with a switcher, compare
// columns, tasks) with its threads — live through `conversationChanged`.
import { useState } from "preact/hooks";
import { gql, useLiveEvents, useQuery, useSubscription } from "../api";
import { count, pretty, when } from "../format";

const LIST = `{ conversations(first: 100) { nodes { topicId userId title agentId groupId messageCount updatedAt } } }`;
const TOPIC = `query($id: String!, $owner: String) { conversation(topicId: $id, ownerId: $owner) { topicId userId title agentId messageCount flatList threads { threadId sourceMessageId kind title createdAt } } }`;
const CHANGED = `subscription($id: String!, $owner: String) { conversationChanged(topicId: $id, ownerId: $owner) { position eventType } }`;
const SWITCH = `mutation($t: String!, $m: String!, $i: Int!, $owner: String) { switchBranch(topicId: $t, messageId: $m, activeBranchIndex: $i, ownerId: $owner) { position } }`;

/** The console link to `owner`'s topic `topicId` (topic ids are per owner). */
export function topicHref(topicId: string, owner: string): string {
  return `/conversations/${encodeURIComponent(topicId)}?owner=${encodeURIComponent(owner)}`;
}

/** The Conversations page. */
export function Conversations() {
  const q = useQuery(LIST);
  useLiveEvents({ streamPrefix: "conversation" }, () => q.reload());
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const rows = q.data?.conversations.nodes ?? [];
  return (
    <section>
      <h1>Conversations</h1>
      {q.data && rows.length === 0 && <p>No conversations.</p>}
      <ul class="briefs">
        {rows.map((c: any) => (
          <li key={`${c.userId}/${c.topicId}`} class="brief" data-topic={c.topicId}>
            <a href={topicHref(c.topicId, c.userId)}>{c.title ?? c.topicId}</a>{" "}
            <small>
              {c.messageCount} messages · {c.agentId ?? c.groupId ?? ""} · {when(c.updatedAt)}
            </small>
          </li>
        ))}
      </ul>
    </section>
  );
}

type Msg = Record<string, any>;

function Content({ m }: { m: Msg }) {
  return (
    <>
      {m.reasoning?.content && (
        <details>
          <summary>Reasoning</summary>
          <p>{m.reasoning.content}</p>
        </details>
      )}
      {m.content && <p class="content">{m.content}</p>}
      {m.error && <pre class="error">{pretty(m.error)}</pre>}
      {(m.tools ?? []).map((t: Msg) => (
        <details key={t.id} class="tool">
          <summary>
            Tool <code>{t.apiName ?? t.identifier ?? t.id}</code> {t.result?.error ? "failed" : t.result ? "answered" : "pending"}
          </summary>
          <pre>{t.arguments}</pre>
          {t.result && <pre>{t.result.content}</pre>}
        </details>
      ))}
      {m.usage && (
        <small>
          {count(m.usage.totalTokens ?? m.usage.totalInputTokens)} tokens
        </small>
      )}
    </>
  );
}

function Message({ m, topicId, owner, onChange }: { m: Msg; topicId: string; owner: string; onChange: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const go = async (i: number) => {
    try {
      await gql(SWITCH, { t: topicId, m: m.parentId, i, owner });
      onChange();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <li class={`msg r-${m.role}`} data-message={m.id} data-role={m.role}>
      <strong>{m.role}</strong> <small>{when(m.createdAt ? new Date(m.createdAt).toISOString() : null)}</small>
      {m.branch && m.parentId && (
        <span class="branch" role="group" aria-label="Branches">
          <button disabled={m.branch.activeBranchIndex <= 0} onClick={() => go(m.branch.activeBranchIndex - 1)} aria-label="Previous branch">
            ‹
          </button>
          {m.branch.activeBranchIndex + 1} / {m.branch.count}
          <button
            disabled={m.branch.activeBranchIndex >= m.branch.count - 1}
            onClick={() => go(m.branch.activeBranchIndex + 1)}
            aria-label="Next branch"
          >
            ›
          </button>
        </span>
      )}
      {error && <p role="alert" class="error">{error}</p>}
      {m.children ? (
        <ol class="blocks">
          {m.children.map((b: Msg) => (
            <li key={b.id}>
              <Content m={b} />
              {b.council && (
                <ul class="tree">
                  {b.council.map((c: Msg) => (
                    <Message key={c.id} m={c} topicId={topicId} owner={owner} onChange={onChange} />
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ol>
      ) : m.columns ? (
        <div class="board">
          {m.columns.map((col: Msg[], i: number) => (
            <ol key={i} class="column">
              {col.map((c) => (
                <Message key={c.id} m={c} topicId={topicId} owner={owner} onChange={onChange} />
              ))}
            </ol>
          ))}
        </div>
      ) : m.tasks ? (
        <ul>
          {m.tasks.map((t: Msg) => (
            <Message key={t.id} m={t} topicId={topicId} owner={owner} onChange={onChange} />
          ))}
        </ul>
      ) : (
        <Content m={m} />
      )}
    </li>
  );
}

/** One conversation. */
export function Conversation({ id, owner }: { id: string; owner?: string }) {
  const q = useQuery(TOPIC, { id, owner });
  useSubscription(CHANGED, { id, owner }, () => q.reload());
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const c = q.data?.conversation;
  if (!c) return <p>Loading…</p>;
  return (
    <section>
      <h1>{c.title ?? c.topicId}</h1>
      <p>
        <small>
          {c.messageCount} messages · {c.agentId ?? ""}
        </small>
      </p>
      <ol class="conversation">
        {(c.flatList as Msg[]).map((m) => (
          <Message key={m.id} m={m} topicId={c.topicId} owner={c.userId} onChange={q.reload} />
        ))}
      </ol>
      <h2>Threads</h2>
      {c.threads.length === 0 && <p>No threads.</p>}
      <ul>
        {c.threads.map((t: any) => (
          <li key={t.threadId}>
            {t.title ?? t.threadId} <small>
              {t.kind} · from {t.sourceMessageId}
            </small>
          </li>
        ))}
      </ul>
    </section>
  );
}
