// graphql-ws (the graphql-transport-ws protocol), resuming the log from a position:
// `node snippets/graphql-ws.mjs <url> <token>`.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, token] = process.argv.slice(2);
const client = createClient({
  url: url.replace(/^http/, 'ws'),
  webSocketImpl: WebSocket,
  // Browsers cannot set headers on a websocket: the token goes in `connection_init`.
  connectionParams: { authorization: `Bearer ${token}` },
});
const seen = [];
await new Promise((resolve, reject) => {
  const stop = client.subscribe(
    { query: 'subscription($from: Int) { events(fromPosition: $from) { position eventType } }', variables: { from: 0 } },
    {
      next: ({ data, errors }) => {
        if (errors) return reject(errors);
        seen.push(data.events.position);
        if (seen.length === 2) { stop(); resolve(); }
      },
      error: reject,
      complete: resolve,
    },
  );
});
await client.dispose();
console.log(`events from position 0: ${seen.join(' ')}`);
