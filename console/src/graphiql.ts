// GraphiQL over this server, with nothing from a CDN: React and GraphiQL are the production
// builds the binary serves next to this file. The Authorization header is in the Headers
// editor, filled with the console's token when one is signed in; subscriptions go over
// graphql-ws with the same header in connection_init.
import { createClient } from "graphql-ws";
import { TOKEN_KEY } from "./session";

declare const React: { createElement(...args: unknown[]): unknown };
declare const ReactDOM: { createRoot(el: Element): { render(node: unknown): void } };
declare const GraphiQL: {
  (props: unknown): unknown;
  createFetcher(options: unknown): unknown;
};

const token = sessionStorage.getItem(TOKEN_KEY) ?? "";
const http = new URL("/graphql", location.href).toString();
const ws = http.replace(/^http/, "ws");

// The headers GraphiQL's editor holds for the current request; read for each connection.
let editorHeaders: Record<string, string> = { Authorization: `Bearer ${token}` };
const wsClient = createClient({
  url: ws,
  lazy: true,
  connectionParams: () => ({ authorization: editorHeaders.Authorization ?? editorHeaders.authorization ?? "" }),
});

const fetcher = GraphiQL.createFetcher({ url: http, wsClient });
const withHeaders = (params: unknown, opts?: { headers?: Record<string, string> }) => {
  if (opts?.headers) editorHeaders = opts.headers;
  return (fetcher as (p: unknown, o: unknown) => unknown)(params, opts);
};

const root = document.getElementById("graphiql");
if (root) {
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: withHeaders,
      defaultHeaders: JSON.stringify({ Authorization: `Bearer ${token}` }, null, 2),
      defaultEditorToolsVisibility: "headers",
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    }),
  );
}
