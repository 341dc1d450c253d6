// urql, Apollo Client and graphql-request, each with its default settings (urql sends queries as
// GET), against a running agentlog: `node clients.mjs <url> <token>`. Each creates a task through
// a mutation, reads it back through a query, and sees a coded error for a bad request. Prints one
// line per check; exits 1 on the first failure. Run by api/tests/it/clients.rs.
import { Client, fetchExchange, gql as urqlGql } from '@urql/core';
import { ApolloClient, HttpLink, InMemoryCache, gql as apolloGql } from '@apollo/client';
import { GraphQLClient, gql as requestGql, ClientError } from 'graphql-request';

const [url, token] = process.argv.slice(2);
const headers = { authorization: `Bearer ${token}` };
const create = (id) => `mutation { createTask(input: {taskId: "${id}", identifier: "${id}", instruction: "from a client"}) { task { taskId instruction } } }`;
const read = (id) => `query { task(id: "${id}") { taskId instruction } }`;

function check(name, ok, detail) {
  if (!ok) {
    console.log(`FAIL ${name}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok   ${name}`);
}

// urql: `preferGetMethod` defaults to 'within-url-limit', so the query goes as a GET.
{
  const seen = [];
  const client = new Client({
    url,
    exchanges: [fetchExchange],
    fetchOptions: { headers },
    fetch: (input, init) => {
      seen.push(init?.method ?? 'GET');
      return fetch(input, init);
    },
  });
  const made = await client.mutation(urqlGql(create('urql-1')), {}).toPromise();
  check('urql mutation', made.data?.createTask?.task?.taskId === 'urql-1', made.error ?? made.data);
  const got = await client.query(urqlGql(read('urql-1')), {}).toPromise();
  check('urql query', got.data?.task?.instruction === 'from a client', got.error ?? got.data);
  check('urql sent the query as GET', seen.includes('GET') && seen.includes('POST'), seen);
  const bad = await client.query(urqlGql('query { task(id: "no-such-task") { taskId } }'), {}).toPromise();
  check('urql error code', bad.error?.graphQLErrors?.[0]?.extensions?.code === 'NOT_FOUND', bad.error);
}

// Apollo Client: POST, `Accept: application/graphql-response+json,application/json;q=0.9`.
{
  const client = new ApolloClient({ link: new HttpLink({ uri: url, headers }), cache: new InMemoryCache() });
  const made = await client.mutate({ mutation: apolloGql(create('apollo-1')) });
  check('apollo mutation', made.data?.createTask?.task?.taskId === 'apollo-1', made);
  const got = await client.query({ query: apolloGql(read('apollo-1')) });
  check('apollo query', got.data?.task?.instruction === 'from a client', got);
  let code;
  try {
    await client.query({ query: apolloGql('query { noSuchField }'), fetchPolicy: 'no-cache' });
  } catch (e) {
    code = (e.errors ?? e.graphQLErrors ?? e.result?.errors)?.[0]?.extensions?.code ?? e.message;
  }
  check('apollo validation error', code === 'VALIDATION', code);
}

// graphql-request: POST with JSON.
{
  const client = new GraphQLClient(url, { headers });
  const made = await client.request(requestGql`${create('request-1')}`);
  check('graphql-request mutation', made.createTask?.task?.taskId === 'request-1', made);
  const got = await client.request(requestGql`${read('request-1')}`);
  check('graphql-request query', got.task?.instruction === 'from a client', got);
  let code;
  try {
    await client.request('query { task(id: "no-such-task") { taskId } }');
  } catch (e) {
    code = e instanceof ClientError ? e.response.errors?.[0]?.extensions?.code : e.message;
  }
  check('graphql-request error code', code === 'NOT_FOUND', code);
}
console.log('all clients ok');
