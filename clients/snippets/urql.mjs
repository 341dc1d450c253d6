// urql (queries go as GET, as urql sends them by default): `node snippets/urql.mjs <url> <token>`.
import { Client, fetchExchange, gql } from '@urql/core';

const [url, token] = process.argv.slice(2);
const client = new Client({ url, exchanges: [fetchExchange], fetchOptions: { headers: { authorization: `Bearer ${token}` } } });
await client.mutation(gql`mutation { createTask(input: {taskId: "urql-t1", identifier: "U-1", instruction: "hello"}) { position } }`, {}).toPromise();
const { data, error } = await client.query(gql`query($id: ID!) { node(id: $id) { __typename globalId } }`, { id: 'not-a-global-id' }).toPromise();
console.log(error?.graphQLErrors?.[0]?.extensions?.code ?? data);
const tasks = await client.query(gql`query { tasks(first: 10) { edges { node { taskId } } } }`, {}).toPromise();
console.log(tasks.data.tasks.edges.map((e) => e.node.taskId).join(' '));
