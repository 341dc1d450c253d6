// First meaningful paint of every console page against a running server:
// node test/paint.mjs <base-url> <token> [rounds]
// A page has painted meaningfully when its heading is drawn and no "Loading…" is left in it
// (its first data arrived and was rendered); the figure is that moment's performance.now(),
// from the start of the navigation. Each page is loaded `rounds` times (default 5) in a fresh
// tab; the median and the worst are printed, as a Markdown table.
import { chromium } from "playwright-core";

const [base, token, roundsArg] = process.argv.slice(2);
if (!token) throw new Error("usage: paint.mjs <base-url> <token> [rounds]");
const rounds = Number(roundsArg ?? 5);
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

async function gql(query, variables = {}) {
  const r = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await r.json();
  if (body.errors) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

// One of each kind of page: the longest run, a task with runs, a conversation.
const run = (await gql(`{ operations(first: 200) { nodes { id stepCount } } }`)).operations.nodes.sort((a, b) => b.stepCount - a.stepCount)[0];
const task = (await gql(`{ tasks(first: 200) { nodes { taskId totalTopics } } }`)).tasks.nodes.sort((a, b) => b.totalTopics - a.totalTopics)[0];
const topic = (await gql(`{ conversations(first: 1) { nodes { topicId } } }`)).conversations.nodes[0];
const pages = [
  ["Runs", "/runs"],
  ["a run", run && `/runs/${encodeURIComponent(run.id)}`],
  ["Inbox", "/inbox"],
  ["Tasks", "/tasks"],
  ["a task", task && `/tasks/${encodeURIComponent(task.taskId)}`],
  ["Conversations", "/conversations"],
  ["a conversation", topic && `/conversations/${encodeURIComponent(topic.topicId)}`],
  ["Schedules", "/schedules"],
  ["Analytics", "/analytics"],
  ["Log", "/log"],
].filter(([, path]) => path);

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log("| page | path | median ms | worst ms |\n|---|---|---:|---:|");
try {
  for (const [name, path] of pages) {
    const times = [];
    for (let i = 0; i < rounds; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addInitScript((t) => sessionStorage.setItem("agentlog.token", t), token);
      const page = await context.newPage();
      await page.goto(`${base}${path}`, { waitUntil: "commit" });
      await page.waitForFunction(
        () => {
          const main = document.querySelector("main");
          return !!main && !!main.querySelector("h1") && !main.innerText.includes("Loading…");
        },
        null,
        { timeout: 30000, polling: "raf" },
      );
      times.push(Math.round(await page.evaluate(() => performance.now())));
      await context.close();
    }
    console.log(`| ${name} | \`${path.length > 40 ? `${path.slice(0, 39)}…` : path}\` | ${median(times)} | ${Math.max(...times)} |`);
  }
} finally {
  await browser.close();
}
