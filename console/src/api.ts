// The console's only way to the server: GraphQL over HTTP for queries and mutations,
// graphql-ws for subscriptions, both carrying the session's bearer token.
import { createClient, type Client } from "graphql-ws";
import { useEffect, useRef, useState } from "preact/hooks";
import { signOut, token, onTokenChange } from "./session";

/** A GraphQL error the server answered, with its `extensions.code`. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

type GqlError = { message: string; extensions?: { code?: string } };

/** Run a query or mutation; UNAUTHENTICATED signs out (back to the sign-in page). */
export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}, with_token?: string): Promise<T> {
  const t = with_token ?? token();
  const r = await fetch("/graphql", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      ...(t ? { authorization: `Bearer ${t}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await r.json()) as { data?: T; errors?: GqlError[] };
  const errors = body.errors ?? [];
  if (errors.length > 0) {
    const code = errors[0].extensions?.code ?? "INTERNAL";
    if (errors.some((e) => e.extensions?.code === "UNAUTHENTICATED") && with_token === undefined) signOut();
    throw new ApiError(errors.map((e) => e.message).join("; "), code);
  }
  return body.data as T;
}

let client: Client | null = null;
onTokenChange(() => {
  client?.dispose();
  client = null;
});

function ws(): Client {
  if (!client) {
    const url = new URL("/graphql", location.href).toString().replace(/^http/, "ws");
    client = createClient({
      url,
      lazy: true,
      retryAttempts: Infinity,
      connectionParams: () => ({ authorization: `Bearer ${token() ?? ""}` }),
      on: {
        closed: (e) => {
          // 4401: the token was refused or revoked.
          if ((e as CloseEvent).code === 4401) signOut();
        },
      },
    });
  }
  return client;
}

/** Subscribe while mounted; `onData` gets each payload's `data`. */
export function useSubscription(
  query: string,
  variables: Record<string, unknown> | null,
  onData: (data: any) => void,
): void {
  const handler = useRef(onData);
  handler.current = onData;
  const key = JSON.stringify(variables);
  useEffect(() => {
    if (variables === null) return;
    return ws().subscribe(
      { query, variables },
      {
        next: (msg) => msg.data && handler.current(msg.data),
        // A refused subscription (LIMIT, …) ends; the page still reads on demand.
        error: (e) => console.warn("subscription ended", e),
        complete: () => {},
      },
    );
  }, [query, key]);
}

/** A query's state: loading, its data, or its error. */
export type Loaded<T> = { data?: T; error?: ApiError; loading: boolean };

/** Run `query` when mounted and whenever `variables` change; `reload()` runs it again (live pages call it on a subscription's event). */
export function useQuery<T = any>(query: string, variables: Record<string, unknown> = {}): Loaded<T> & { reload: () => void } {
  const [state, setState] = useState<Loaded<T>>({ loading: true });
  const [tick, setTick] = useState(0);
  const key = JSON.stringify(variables);
  useEffect(() => {
    let live = true;
    gql<T>(query, variables)
      .then((data) => live && setState({ data, loading: false }))
      .catch((error) => live && setState((s) => ({ data: s.data, error, loading: false })));
    return () => {
      live = false;
    };
  }, [query, key, tick]);
  const pending = useRef<number | null>(null);
  const reload = () => {
    // Bursts of events cost one query.
    if (pending.current !== null) return;
    pending.current = window.setTimeout(() => {
      pending.current = null;
      setTick((n) => n + 1);
    }, 100);
  };
  return { ...state, reload };
}

const HEAD = `{ headPosition }`;
const EVENTS = `subscription($from: Int, $filter: EventFilterInput) {
  events(fromPosition: $from, filter: $filter, settled: true) { position eventType streamId eventId rootSourceId recordedAt payload userId }
}`;

/** Events that pass `filter` from now on (from the head when mounted, never the whole log),
 * each once the read models include it: a page that reads again on one sees its effects. */
export function useLiveEvents(filter: Record<string, unknown>, onEvent: (event: any) => void): void {
  const head = useQuery<{ headPosition: number }>(HEAD, { filter });
  useSubscription(EVENTS, head.data ? { from: head.data.headPosition, filter } : null, (d) => onEvent(d.events));
  // What happened between the page's first read and the head read: read the page again once.
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    if (head.data) handler.current(null);
  }, [head.data]);
}
