// The operator console: sign-in, the navigation, and the pages by route.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./console.css";
import { ApiError, gql, useLiveEvents, useQuery } from "./api";
import { Analytics } from "./pages/analytics";
import { Conversation, Conversations } from "./pages/conversations";
import { Inbox } from "./pages/inbox";
import { Log } from "./pages/log";
import { Run } from "./pages/run";
import { Runs } from "./pages/runs";
import { Schedules } from "./pages/schedules";
import { Task, Tasks } from "./pages/tasks";
import { onLink, useLocation } from "./router";
import { onTokenChange, signIn, signOut, token } from "./session";

const VIEWER = `{ viewer { userId admin } }`;
const UNREAD = `{ unreadNotificationCount }`;

function SignIn({ problem }: { problem: string | null }) {
  const [error, setError] = useState<string | null>(problem);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = String(new FormData(e.target as HTMLFormElement).get("token") ?? "").trim();
    try {
      await gql(VIEWER, {}, t);
      signIn(t);
    } catch (err) {
      setError(err instanceof ApiError && err.code === "UNAUTHENTICATED" ? "That token is not valid." : (err as Error).message);
    }
  };
  return (
    <main class="signin">
      <h1>agentlog</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <label>
          Bearer token <input name="token" type="password" autocomplete="off" required autofocus />
        </label>
        <button type="submit">Sign in</button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
      <p>
        <small>The token stays in this tab's session storage. GraphiQL: <a href="/graphql">/graphql</a>.</small>
      </p>
    </main>
  );
}

function UnreadBadge() {
  const q = useQuery<{ unreadNotificationCount: number }>(UNREAD);
  // Created, read, unread, archived: every change is in the user's notification stream.
  useLiveEvents({ streamPrefix: "notification-" }, () => q.reload());
  const n = q.data?.unreadNotificationCount ?? 0;
  return n > 0 ? (
    <span class="badge" data-unread-count aria-label={`${n} unread`}>
      {n}
    </span>
  ) : null;
}

function Page({ url }: { url: URL }) {
  const path = url.pathname.replace(/\/+$/, "") || "/";
  // Run, task and topic ids are per owner: a link to someone else's (an admin's view) names its owner.
  const owner = url.searchParams.get("owner") ?? undefined;
  const run = path.match(/^\/runs\/(.+)$/);
  if (run) return <Run key={run[1] + (owner ?? "")} id={decodeURIComponent(run[1])} owner={owner} />;
  if (path === "/" || path === "/runs") return <Runs />;
  const task = path.match(/^\/tasks\/(.+)$/);
  if (task) return <Task key={task[1] + (owner ?? "")} id={decodeURIComponent(task[1])} owner={owner} />;
  if (path === "/tasks") return <Tasks />;
  const topic = path.match(/^\/conversations\/(.+)$/);
  if (topic) return <Conversation key={topic[1] + (owner ?? "")} id={decodeURIComponent(topic[1])} owner={owner} />;
  if (path === "/conversations") return <Conversations />;
  if (path === "/inbox") return <Inbox />;
  if (path === "/schedules") return <Schedules />;
  if (path === "/analytics") return <Analytics />;
  if (path === "/log") return <Log />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <a href="/runs">Runs</a>
      </p>
    </section>
  );
}

function Shell() {
  const url = useLocation();
  const viewer = useQuery<{ viewer: { userId: string; admin: boolean } }>(VIEWER);
  const here = (p: string) => (url.pathname === p || (p === "/runs" && url.pathname === "/") ? "page" : undefined);
  return (
    <>
      <header>
        <nav aria-label="Pages">
          <strong>agentlog</strong>
          <a href="/runs" aria-current={here("/runs")}>
            Runs
          </a>
          <a href="/inbox" aria-current={here("/inbox")}>
            Inbox <UnreadBadge />
          </a>
          <a href="/tasks" aria-current={here("/tasks")}>
            Tasks
          </a>
          <a href="/conversations" aria-current={here("/conversations")}>
            Conversations
          </a>
          <a href="/schedules" aria-current={here("/schedules")}>
            Schedules
          </a>
          <a href="/analytics" aria-current={here("/analytics")}>
            Analytics
          </a>
          <a href="/log" aria-current={here("/log")}>
            Log
          </a>
          <a href="/graphql" data-external>
            GraphiQL
          </a>
        </nav>
        <div class="who">
          {viewer.data && (
            <span data-viewer={viewer.data.viewer.userId}>
              {viewer.data.viewer.userId}
              {viewer.data.viewer.admin && " (admin)"}
            </span>
          )}
          <button onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main>
        <Page url={url} />
      </main>
    </>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(token() !== null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(
    () =>
      onTokenChange(() => {
        const now = token() !== null;
        setSignedIn((was) => {
          if (was && !now) setProblem("Signed out.");
          return now;
        });
      }),
    [],
  );
  return <div onClick={onLink as any}>{signedIn ? <Shell /> : <SignIn problem={problem} />}</div>;
}

const root = document.getElementById("app");
if (root) render(<App />, root);
