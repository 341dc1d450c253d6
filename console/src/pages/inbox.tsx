// The inbox: cards waiting for a human (answered here), briefs with their actions, and
// notifications with the unread count — all live.
import { useState } from "preact/hooks";
import { gql, useLiveEvents, useQuery } from "../api";
import { CardForm, type Card } from "../card";
import { runLink } from "../links";
import { safeHref, when } from "../format";

const INBOX = `{
  pendingCards(first: 50) { nodes { operationId userId cardId kind title card askedAt deadline } }
  briefs(first: 50) { nodes { briefId userId type priority title summary actions taskId operationId resolvedAction resolvedComment resolvedAt createdAt origin { event { rootSourceId } } } }
  notifications(first: 50) { nodes { notificationId category type title body actionUrl isRead createdAt origin { event { rootSourceId } } } }
  unreadNotificationCount
}`;
// Brief ids are per owner: an admin acts on another user's brief by naming its owner.
const RESOLVE = `mutation($id: String!, $owner: String, $action: String!, $comment: String) { resolveBrief(id: $id, ownerId: $owner, action: $action, comment: $comment) { position } }`;
const READ = `mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { unreadCount } }`;

type Action = { key: string; label: string; type?: string; url?: string };

function Brief({ b, onDone }: { b: any; onDone: () => void }) {
  const [comment, setComment] = useState("");
  const [error, setError] = useState<string | null>(null);
  const act = async (key: string) => {
    setError(null);
    try {
      await gql(RESOLVE, { id: b.briefId, owner: b.userId, action: key, comment: comment || null });
      onDone();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <li class={`brief p-${b.priority}`} data-brief={b.briefId}>
      <h3>
        {b.title} <small>{b.type}</small>
      </h3>
      <p>{b.summary}</p>
      <p>
        <small>
          {when(b.createdAt)}
          {b.taskId && <> · task {b.taskId}</>}
          {b.operationId && (
            <>
              {" "}
              · <a href={runLink(b.operationId, b.userId)}>run {b.operationId}</a>
            </>
          )}
          {b.origin && (
            <>
              {" "}
              · <a href={`/log?root=${b.origin.event.rootSourceId}`}>why?</a>
            </>
          )}
        </small>
      </p>
      {b.resolvedAction ? (
        <p>
          Resolved: <strong>{b.resolvedAction}</strong> {b.resolvedComment && <q>{b.resolvedComment}</q>}
        </p>
      ) : (
        <div class="actions">
          <label>
            Comment <input value={comment} onInput={(e) => setComment((e.target as HTMLInputElement).value)} />
          </label>
          {(b.actions as Action[]).map((a) =>
            safeHref(a.url) ? (
              <a
                key={a.key}
                href={safeHref(a.url) ?? undefined}
                target="_blank"
                data-external
                rel="noreferrer noopener"
                onClick={() => act(a.key)}
              >
                {a.label}
              </a>
            ) : a.url ? (
              <button key={a.key} disabled title="Not an http(s) or relative link">
                {a.label}
              </button>
            ) : (
              <button key={a.key} onClick={() => act(a.key)}>
                {a.label}
              </button>
            ),
          )}
        </div>
      )}
      {error && <p role="alert" class="error">{error}</p>}
    </li>
  );
}

/** The Inbox page. */
export function Inbox() {
  const q = useQuery(INBOX);
  useLiveEvents({ streamPrefix: "operation" }, () => q.reload());
  useLiveEvents({ streamPrefix: "brief-" }, () => q.reload());
  useLiveEvents({ streamPrefix: "notification-" }, () => q.reload());
  if (q.error && !q.data) return <p role="alert" class="error">{q.error.message}</p>;
  const d = q.data;
  if (!d) return <p>Loading…</p>;
  const unread = d.notifications.nodes.filter((n: any) => !n.isRead).map((n: any) => n.notificationId);
  return (
    <section>
      <h1>Inbox</h1>
      <section aria-labelledby="cards">
        <h2 id="cards">Waiting for you ({d.pendingCards.nodes.length})</h2>
        {d.pendingCards.nodes.length === 0 && <p>No card waits for an answer.</p>}
        {d.pendingCards.nodes.map((c: any) => (
          <div key={`${c.operationId}/${c.cardId}`} class="pending">
            <p>
              <a href={runLink(c.operationId, c.userId)}>run {c.operationId}</a> · asked {when(c.askedAt)}
              {c.deadline && <> · due {when(c.deadline)}</>}
            </p>
            <CardForm operationId={c.operationId} owner={c.userId} card={c.card as Card} onAnswered={q.reload} />
          </div>
        ))}
      </section>
      <section aria-labelledby="briefs">
        <h2 id="briefs">Briefs</h2>
        {d.briefs.nodes.length === 0 && <p>No briefs.</p>}
        <ul class="briefs">
          {d.briefs.nodes.map((b: any) => (
            <Brief key={b.briefId} b={b} onDone={q.reload} />
          ))}
        </ul>
      </section>
      <section aria-labelledby="notifications">
        <h2 id="notifications">
          Notifications <span data-unread>{d.unreadNotificationCount}</span> unread
        </h2>
        {unread.length > 0 && (
          <button onClick={() => gql(READ, { ids: unread }).then(q.reload)}>Mark these read</button>
        )}
        <ul class="notifications">
          {d.notifications.nodes.map((n: any) => (
            <li key={n.notificationId} class={n.isRead ? "read" : "unread"}>
              <strong>{n.title}</strong> <small>{n.category} · {when(n.createdAt)}</small>
              <p>{n.body}</p>
              {safeHref(n.actionUrl) && (
                <a href={safeHref(n.actionUrl) ?? undefined} data-external rel="noreferrer noopener">
                  open
                </a>
              )}{" "}
              {n.origin && <a href={`/log?root=${n.origin.event.rootSourceId}`}>why?</a>}
            </li>
          ))}
        </ul>
      </section>
    </section>
  );
}
