// A worker over plain HTTP and a websocket, with no GraphQL library: what a worker in any
// language does. `node snippets/worker.mjs <url> <token>`: it registers an agent, starts a run,
// hears of it on `workAvailable`, claims it, reports a step and completes it.
import WebSocket from 'ws';

const [url, token] = process.argv.slice(2);
async function gql(query, variables = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json();
  if (body.errors) throw new Error(`${body.errors[0].extensions?.code}: ${body.errors[0].message}`);
  return body.data;
}

// The graphql-transport-ws frames: connection_init → connection_ack, subscribe → next….
const started = {};
const subscribed = new Promise((resolve) => { started.resolve = resolve; });
const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
const work = new Promise((resolve, reject) => {
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (raw) => {
    const msg = JSON.parse(raw);
    if (msg.type === 'connection_ack') {
      socket.send(JSON.stringify({
        id: 'work', type: 'subscribe',
        payload: { query: 'subscription { workAvailable(agentIds: ["snippet-agent"]) { id status } }' },
      }));
      started.resolve();
    } else if (msg.type === 'next') {
      resolve(msg.payload.data.workAvailable.id);
    } else if (msg.type === 'error') {
      reject(new Error(JSON.stringify(msg.payload)));
    }
  });
  socket.on('error', reject);
});

await gql('mutation($i: JSON!) { registerAgent(input: $i) { position } }', {
  i: { agentId: 'snippet-agent', config: { slug: 'snippet', title: 'Snippet', model: 'gpt-4o', provider: 'openai' } },
});
await subscribed;
await gql('mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }', {
  i: { operationId: 'snippet-run-1', kind: 'CONVERSATION', agentId: 'snippet-agent' },
});
const id = await work;
const claimed = await gql('mutation($id: String!) { claimOperation(id: $id, workerId: "snippet-worker") { lease { token } } }', { id });
const lt = claimed.claimOperation.lease.token;
await gql('mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, usage: {inputTokens: 12, outputTokens: 3}) { position } }', { id, lt });
await gql('mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: "done") { position } }', { id, lt });
socket.close();
const { operation } = await gql('query($id: String!) { operation(id: $id) { status stepCount } }', { id });
console.log(`${id}: ${operation.status} after ${operation.stepCount} step(s)`);
