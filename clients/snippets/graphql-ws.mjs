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
const events = client.iterate({
  query: 'subscription($from: Int) { events(fromPosition: $from) { position eventType } }',
  variables: { from: 0 },
});
const seen = [];
for await (const { data, errors } of events) {
  if (errors) throw new Error(JSON.stringify(errors));
  seen.push(data.events.position);
  if (seen.length === 2) break; // leaving the loop completes the subscription
}
await client.dispose();
console.log(`events from position 0: ${seen.join(' ')}`);
