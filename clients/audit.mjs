// graphql-http's server audits (the GraphQL-over-HTTP spec's own compliance suite) against a
// running agentlog: `node audit.mjs <url> <token>`. Prints every audit; exits 1 on any error or
// warning. Run by api/tests/it/clients.rs.
import { serverAudits } from 'graphql-http';

const [url, token] = process.argv.slice(2);
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

let bad = 0;
for (const audit of serverAudits({ url, fetchFn })) {
  const result = await audit.fn();
  const line = `${result.status.padEnd(5)} ${audit.id} ${audit.name}`;
  if (result.status === 'ok') {
    console.log(line);
  } else {
    bad += 1;
    let body = '';
    try {
      body = await result.response.text();
    } catch {}
    console.log(`${line}\n      ${result.reason}\n      HTTP ${result.response.status} ${result.response.headers.get('content-type')} ${body.slice(0, 300)}`);
  }
}
console.log(`${bad} not ok`);
process.exit(bad === 0 ? 0 : 1);
