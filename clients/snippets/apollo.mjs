// Apollo Client: `node snippets/apollo.mjs <url> <token>`.
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';

const [url, token] = process.argv.slice(2);
const client = new ApolloClient({
  link: new HttpLink({ uri: url, headers: { authorization: `Bearer ${token}` } }),
  // Ids are unique per owner; `globalId` is unique across the server.
  cache: new InMemoryCache({ typePolicies: { Task: { keyFields: ['globalId'] } } }),
});
await client.mutate({
  mutation: gql`mutation { createTask(input: {taskId: "apollo-t1", identifier: "A-1", instruction: "hello"}) { position } }`,
});
const { data } = await client.query({
  query: gql`query { tasks(last: 10) { edges { node { globalId taskId status } } pageInfo { hasPreviousPage startCursor } } }`,
});
console.log(data.tasks.edges.map((e) => e.node.taskId).join(' '));
