// The console in a real browser (Debian's Chromium driven by playwright-core) against a real
// agentlog server: node test/browser.mjs <base-url> <admin-token> <user-token> <other-user-token>
// Every request that is not to the loopback interface is blocked and fails the test. With
// SCREENSHOTS=<dir> it also writes each page's screenshot there (scripts/console-screenshots.sh).
import { chromium } from "playwright-core";
import assert from "node:assert/strict";

const [base, adminToken, userToken, otherToken] = process.argv.slice(2);
if (!otherToken) throw new Error("usage: browser.mjs <base-url> <admin-token> <user-token> <other-user-token>");
const shots = process.env.SCREENSHOTS;
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

async function gql(token, query, variables = {}) {
  const r = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await r.json();
  if (body.errors) throw new Error(`${query}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function eventually(what, f, ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const loopback = (u) => {
  const { hostname, protocol } = new URL(u);
  return protocol === "data:" || hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]";
};

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const problems = [];
const blocked = [];
async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (loopback(url)) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  pages.push(page);
  page.on("console", (m) => m.type() === "error" && problems.push(`console error on ${page.url()}: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
  page.on("websocket", (ws) => loopback(ws.url()) || blocked.push(ws.url()));
  return page;
}
const shot = async (page, name) => shots && (await page.screenshot({ path: `${shots}/${name}.png`, fullPage: false }));
const step = (s) => console.log(`- ${s}`);

const pages = [];
try {
  const page = await newPage();

  step("a bad token stays on the sign-in page");
  await page.goto(`${base}/`);
  await page.getByLabel("Bearer token").fill("not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("That token is not valid.").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("agentlog.token")), null);
  await shot(page, "sign-in");

  step("signing in keeps the token in session storage, never in the URL");
  await page.getByLabel("Bearer token").fill(userToken);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Runs" }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("agentlog.token")), userToken);
  assert.ok(!page.url().includes(userToken));
  await page.locator("[data-viewer]").waitFor();
  assert.equal(await page.locator("[data-viewer]").getAttribute("data-viewer"), "alice");

  step("a run started through GraphQL appears on Runs within 2 s");
  const id = `console-${Date.now()}`;
  await page.waitForTimeout(300); // the live subscription is open
  const started = Date.now();
  await gql(userToken, `mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }`, {
    i: { operationId: id, kind: "TASK", agentId: "inbox", model: "gpt-4.1-mini", instruction: "Deploy the release" },
  });
  await page.locator(`tr[data-run="${id}"]`).waitFor({ timeout: 2000 });
  console.log(`  appeared after ${Date.now() - started} ms`);

  step("a status change appears live");
  const claim = await gql(userToken, `mutation($id: String!) { claimOperation(id: $id, workerId: "w1") { lease { token } } }`, { id });
  const lease = claim.claimOperation.lease.token;
  await gql(
    userToken,
    `mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: THINKING, usage: { inputTokens: 120, outputTokens: 30, costMicros: 2500 }) { position } }`,
    { id, lt: lease },
  );
  await gql(
    userToken,
    `mutation($id: String!, $lt: String!, $c: JSON!) { askHuman(id: $id, leaseToken: $lt, card: $c) { operation { status } } }`,
    { id, lt: lease, c: { cardId: "deploy", title: "Deploy to production?", kind: "confirm" } },
  );
  await page.locator(`tr[data-run="${id}"] .s-waiting_for_human`).waitFor({ timeout: 2000 });
  await shot(page, "runs");

  step("another user does not see the run; an admin does");
  const other = await newPage();
  await other.goto(`${base}/`);
  await other.evaluate((t) => sessionStorage.setItem("agentlog.token", t), otherToken);
  await other.goto(`${base}/runs`);
  await other.getByRole("heading", { name: "Runs" }).waitFor();
  await other.getByText("No runs match.").waitFor();
  assert.equal(await other.locator(`tr[data-run="${id}"]`).count(), 0);
  await other.evaluate((t) => sessionStorage.setItem("agentlog.token", t), adminToken);
  await other.goto(`${base}/runs`);
  await other.locator(`tr[data-run="${id}"]`).waitFor();
  await other.context().close();

  step("the filter narrows the list (status, model)");
  await page.getByLabel("Status").selectOption("done");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/status=done/);
  await page.locator(`tr[data-run="${id}"]`).waitFor({ state: "detached" });
  await page.goto(`${base}/runs?status=waiting_for_human`);
  await page.locator(`tr[data-run="${id}"]`).waitFor();
  const model = (await gql(userToken, `query($id: String!) { operation(id: $id) { model } }`, { id })).operation.model;
  if (model) {
    await page.goto(`${base}/runs?model=${encodeURIComponent(model)}`);
    await page.locator(`tr[data-run="${id}"]`).waitFor();
    await page.goto(`${base}/runs?model=no-such-model`);
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    await page.locator(`tr[data-run="${id}"]`).waitFor({ state: "detached" });
  }

  step("the run's page: timeline, the card, and the slider's state equals stateAt");
  await page.goto(`${base}/runs`);
  await page.locator(`tr[data-run="${id}"] a`).first().click();
  await page.getByRole("heading", { name: "Timeline" }).waitFor();
  const history = (await gql(userToken, `query($id: String!) { operation(id: $id) { history { position eventType } } }`, { id }))
    .operation.history;
  assert.equal(await page.locator("ol.timeline > li").count(), history.length);
  const slider = page.getByLabel("Event position");
  await slider.focus();
  await page.keyboard.press("Home");
  for (const [i, e] of history.entries()) {
    if (i > 0) await page.keyboard.press("ArrowRight");
    const shown = page.locator(`pre[data-state="${e.position}"]`);
    await eventually(`state at ${e.position}`, async () => (await shown.count()) > 0 && !(await shown.textContent()).startsWith("…"));
    const want = (
      await gql(
        userToken,
        `query($id: String!, $p: Int!) { operation(id: $id) { stateAt(position: $p) { status phase stepCount totalTokens costMicros toolCalls pendingCard plan todos completionReason } } }`,
        { id, p: e.position },
      )
    ).operation.stateAt;
    assert.deepEqual(JSON.parse(await shown.textContent()), want, `state at #${e.position} (${e.eventType})`);
  }
  await shot(page, "run");

  step("a long run's timeline is paged: 200 events, then Load more shows the rest");
  const long = `console-long-${Date.now()}`;
  await gql(userToken, `mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }`, {
    i: { operationId: long, kind: "TASK", agentId: "inbox", model: "gpt-4.1-mini", instruction: "A long run" },
  });
  const longLease = (
    await gql(userToken, `mutation($id: String!) { claimOperation(id: $id, workerId: "w1") { lease { token } } }`, { id: long })
  ).claimOperation.lease.token;
  const steps = Array.from({ length: 240 }, () => ({ step: { phase: "THINKING", usage: { inputTokens: 1, outputTokens: 1 } } }));
  await gql(
    userToken,
    `mutation($id: String!, $lt: String!, $items: [BatchItemInput!]!) { reportBatch(operationId: $id, leaseToken: $lt, items: $items) { position } }`,
    { id: long, lt: longLease, items: steps },
  );
  const total = (await gql(userToken, `query($id: String!) { operation(id: $id) { historyLength } }`, { id: long })).operation
    .historyLength;
  assert.ok(total > 200, `the long run has ${total} events`);
  await page.goto(`${base}/runs/${encodeURIComponent(long)}`);
  await page.getByRole("heading", { name: "Timeline" }).waitFor();
  await eventually("the first page", async () => (await page.locator("ol.timeline > li").count()) === 200);
  await page.getByRole("button", { name: `Load ${total - 200} more` }).click();
  await eventually("every event", async () => (await page.locator("ol.timeline > li").count()) === total);

  step("answering the card on the Inbox page resumes the run");
  await page.getByRole("link", { name: /Inbox/ }).click();
  await page.getByRole("heading", { name: "Inbox" }).waitFor();
  const card = page.locator(`form[data-card="deploy"][data-operation="${id}"]`);
  await card.waitFor();
  await shot(page, "inbox");
  await card.getByRole("button", { name: "Yes" }).click();
  await card.waitFor({ state: "detached", timeout: 3000 });
  const after = await eventually("the run resumed", async () => {
    const o = (await gql(userToken, `query($id: String!) { operation(id: $id) { status cards { outcome answer } } }`, { id })).operation;
    return o.status !== "waiting_for_human" && o;
  });
  assert.equal(after.cards[0].outcome, "answered");
  assert.deepEqual(after.cards[0].answer, { kind: "confirm", confirmed: true });

  step("approving a result brief on the page completes its task and starts what waited on it");
  const [ta, tb] = [`${id}-a`, `${id}-b`];
  for (const t of [ta, tb]) {
    await gql(userToken, `mutation($i: JSON!) { createTask(input: $i) { position } }`, {
      i: { taskId: t, identifier: t.toUpperCase(), instruction: `do ${t}` },
    });
  }
  await gql(userToken, `mutation($id: String!, $on: String!) { addTaskDependency(id: $id, dependsOnId: $on, kind: "blocks") { position } }`, {
    id: tb,
    on: ta,
  });
  const briefId = `brief-${ta}`;
  const resultBrief = (open) => ({
    briefId,
    type: "result",
    title: `${ta} done`,
    summary: "Finished.",
    taskId: ta,
    actions: [
      { key: "approve", label: "Approve", type: "resolve" },
      { key: "comment", label: "Comment", type: "comment" },
      { key: "open", label: "Open", type: "link", url: open },
      { key: "docs", label: "Docs", type: "link", url: "http://127.0.0.1:9/docs" },
    ],
  });
  // The server refuses a script URL, so the page never has one to draw.
  await assert.rejects(
    gql(userToken, `mutation($i: JSON!) { createBrief(input: $i) { position } }`, { i: resultBrief("javascript:alert(document.cookie)") }),
    /VALIDATION/,
  );
  await gql(userToken, `mutation($i: JSON!) { createBrief(input: $i) { position } }`, { i: resultBrief(`/tasks/${ta}`) });
  const brief = page.locator(`li[data-brief="${briefId}"]`);
  await brief.waitFor({ timeout: 3000 });
  assert.equal(await brief.locator('a[href^="javascript"]').count(), 0);
  assert.equal(await brief.getByRole("link", { name: "Open" }).getAttribute("href"), `/tasks/${ta}`);
  assert.equal(await brief.getByRole("link", { name: "Docs" }).getAttribute("href"), "http://127.0.0.1:9/docs");
  await brief.getByRole("button", { name: "Approve" }).click();
  await brief.getByText("Resolved: approve").waitFor({ timeout: 3000 });
  const status = async (t) => (await gql(userToken, `query($id: String!) { task(id: $id) { status } }`, { id: t })).task.status;
  assert.equal(await status(ta), "completed");
  await eventually(`${tb} started`, async () => (await status(tb)) === "running");

  step("an admin approves a user's brief from the admin's inbox (brief ids are per owner)");
  const asked = `${ta}-asked`;
  await gql(userToken, `mutation($i: JSON!) { createBrief(input: $i) { position } }`, {
    i: { briefId: asked, type: "decision", title: `${asked}?`, summary: "Yes or no.", actions: [{ key: "approve", label: "Approve", type: "resolve" }] },
  });
  const admin = await newPage();
  await admin.goto(`${base}/`);
  await admin.evaluate((t) => sessionStorage.setItem("agentlog.token", t), adminToken);
  await admin.goto(`${base}/inbox`);
  const theirs = admin.locator(`li[data-brief="${asked}"]`);
  await theirs.getByRole("button", { name: "Approve" }).click();
  await theirs.getByText("Resolved: approve").waitFor({ timeout: 3000 });
  const resolved = await gql(userToken, `query($id: String!) { brief(id: $id) { resolvedAction } }`, { id: asked });
  assert.equal(resolved.brief.resolvedAction, "approve");
  await admin.context().close();

  step("tasks: the board, a task's page, and running it from there");
  await page.getByRole("link", { name: "Tasks" }).click();
  await page.locator(`[data-column="completed"] li[data-task="${ta}"]`).waitFor();
  await page.locator(`[data-column="running"] li[data-task="${tb}"]`).waitFor();
  await shot(page, "tasks");
  const tc = `${id}-c`;
  await gql(userToken, `mutation($i: JSON!) { createTask(input: $i) { position } }`, {
    i: { taskId: tc, identifier: tc.toUpperCase(), instruction: `do ${tc}`, assigneeAgentId: "inbox" },
  });
  await page.locator(`[data-column="backlog"] li[data-task="${tc}"]`).waitFor({ timeout: 3000 });
  await page.locator(`li[data-task="${tc}"] a`).click();
  await page.getByRole("heading", { name: "Dependencies" }).waitFor();
  await page.getByRole("button", { name: "Run now" }).click();
  await page.locator("li[data-topic]").waitFor({ timeout: 3000 });
  assert.equal(await status(tc), "running");
  await shot(page, "task");

  step("schedules: a cron job disabled from the page");
  const jobId = `${id}-job`;
  await gql(userToken, `mutation($i: JSON!) { createCronJob(input: $i) { position } }`, {
    i: { jobId, agentId: "inbox", pattern: "0 9 * * 1", timezone: "Europe/Berlin", content: "weekly report", enabled: true },
  });
  await page.getByRole("link", { name: "Schedules" }).click();
  const job = page.locator(`tr[data-job="${jobId}"]`);
  const next = (await gql(userToken, `query($id: String!) { cronJob(id: $id) { nextFireAt } }`, { id: jobId })).cronJob.nextFireAt;
  assert.ok(next, "an enabled job fires next");
  await job.locator(`[data-next-fire="${next}"]`).waitFor();
  await job.getByRole("button", { name: "Enabled" }).click();
  await job.getByRole("button", { name: "Disabled" }).waitFor({ timeout: 3000 });
  const enabled = async () => (await gql(userToken, `query($id: String!) { cronJob(id: $id) { enabled } }`, { id: jobId })).cronJob.enabled;
  assert.equal(await enabled(), false);
  await job.locator('[data-next-fire=""]').waitFor({ timeout: 3000 });
  await shot(page, "schedules");

  step("analytics: a finished run is counted and charted");
  await page.getByRole("link", { name: "Analytics" }).click();
  const runsBefore = Number(await page.locator("[data-total-runs]").textContent());
  const again = await gql(userToken, `mutation($id: String!) { claimOperation(id: $id, workerId: "w2") { lease { token } } }`, { id });
  await gql(userToken, `mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: "Deployed.") { position } }`, {
    id,
    lt: again.claimOperation.lease.token,
  });
  await page.locator("[data-total-runs]", { hasText: String(runsBefore + 1) }).waitFor({ timeout: 3000 });
  await page.locator(".chart canvas").first().waitFor();
  await shot(page, "analytics");

  step("a conversation: its branches switched from the page, a new message shown live");
  const topic = `${id}-topic`;
  await gql(userToken, `mutation($t: String!) { createConversation(topicId: $t, title: "Release notes") { position } }`, { t: topic });
  const append = (m) => gql(userToken, `mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }`, { t: topic, m });
  await append({ messageId: "q", role: "user", content: "Write the release notes" });
  await append({ messageId: "a1", role: "assistant", content: "First draft", parentId: "q" });
  await append({ messageId: "a2", role: "assistant", content: "Second draft", parentId: "q" });
  await page.getByRole("link", { name: "Conversations" }).click();
  await page.locator(`li[data-topic="${topic}"] a`).click();
  await page.getByRole("heading", { name: "Release notes" }).waitFor();
  const shownDraft = async () => (await page.locator("li[data-role=assistant] .content").textContent()).trim();
  const first = await shownDraft();
  await page.getByRole("button", { name: first === "First draft" ? "Next branch" : "Previous branch" }).click();
  await page.locator("li[data-role=assistant] .content", { hasText: first === "First draft" ? "Second draft" : "First draft" }).waitFor({ timeout: 3000 });
  const active = (await gql(userToken, `query($t: String!) { conversation(topicId: $t) { flatList } }`, { t: topic })).conversation.flatList;
  assert.equal(active.find((m) => m.role === "assistant").content, await shownDraft(), "the page shows the server's active branch");
  await append({ messageId: "q2", role: "user", content: "Shorter, please", parentId: active.find((m) => m.role === "assistant").id });
  await page.locator("li[data-message=q2]").waitFor({ timeout: 3000 });
  await shot(page, "conversation");

  step("notifications: the unread count is live");
  const before = (await gql(userToken, `{ unreadNotificationCount }`)).unreadNotificationCount;
  await gql(adminToken, `mutation($i: CreateNotificationInput!) { createNotification(input: $i) { position } }`, {
    i: { userId: "alice", category: "system", type: "console_check", title: "Console check", body: "Shown live" },
  });
  await page.locator("[data-unread-count]", { hasText: String(before + 1) }).waitFor({ timeout: 3000 });
  await page.getByRole("link", { name: /Inbox/ }).click();
  await page.locator("[data-unread]", { hasText: String(before + 1) }).waitFor({ timeout: 3000 });
  await page.getByRole("button", { name: "Mark these read" }).click();
  await page.locator("[data-unread]", { hasText: "0" }).waitFor({ timeout: 3000 });
  await page.locator("[data-unread-count]").waitFor({ state: "detached", timeout: 3000 }); // no badge with nothing unread
  assert.equal((await gql(userToken, `{ unreadNotificationCount }`)).unreadNotificationCount, 0);

  step("the log: the tail and an event's chain");
  await page.getByRole("link", { name: "Log" }).click();
  await page.getByRole("heading", { name: "Log" }).waitFor();
  await page.locator(`li[data-event="notification.created"]`).first().waitFor();
  await shot(page, "log");
  await page.getByRole("link", { name: "why?" }).first().click();
  await page.getByRole("heading", { name: /Chain of/ }).waitFor();
  await page.locator("ul.tree li").first().waitFor();
  await shot(page, "chain");

  step("GraphiQL is served locally, with the token in its headers editor");
  const giql = await newPage();
  await giql.goto(`${base}/`);
  await giql.evaluate((t) => sessionStorage.setItem("agentlog.token", t), userToken);
  await giql.goto(`${base}/graphql`);
  await giql.locator(".graphiql-container").waitFor({ timeout: 10000 });
  await giql.getByText(`Bearer ${userToken}`).first().waitFor();
  // A query run from GraphiQL carries the header.
  await giql.locator(".graphiql-query-editor .CodeMirror").first().click();
  await giql.keyboard.press("Control+A");
  await giql.keyboard.insertText("{ viewer { userId } }");
  await giql.getByRole("button", { name: /Execute query/ }).click();
  await giql.locator(".graphiql-response").getByText('"alice"').waitFor({ timeout: 5000 });
  if (shots) await giql.screenshot({ path: `${shots}/graphiql.png`, mask: [giql.getByText(`Bearer ${userToken}`)] });
  await giql.context().close();

  step("every page at 1280×800 and in a narrow window, light and dark: no sideways scroll, no error");
  const everyPage = [
    ["runs", "/runs", "Runs"],
    ["run", `/runs/${encodeURIComponent(id)}`, "Timeline"],
    ["inbox", "/inbox", "Inbox"],
    ["tasks", "/tasks", "Tasks"],
    ["task", `/tasks/${encodeURIComponent(tb)}`, "Dependencies"],
    ["conversations", "/conversations", "Conversations"],
    ["conversation", `/conversations/${encodeURIComponent(topic)}`, "Release notes"],
    ["schedules", "/schedules", "Schedules"],
    ["analytics", "/analytics", "Analytics"],
    ["log", "/log", "Log"],
  ];
  const variants = [
    { width: 1280, height: 800, colorScheme: "light" },
    { width: 1280, height: 800, colorScheme: "dark" },
    { width: 420, height: 860, colorScheme: "light" },
    { width: 420, height: 860, colorScheme: "dark" },
  ];
  // Screenshots of these pages narrow and dark too (docs/console/*-narrow-dark.png).
  const narrowShots = new Set(["runs", "run", "inbox", "task", "schedules"]);
  for (const v of variants) {
    const p = await newPage({ viewport: { width: v.width, height: v.height }, colorScheme: v.colorScheme });
    await p.goto(`${base}/`);
    await p.evaluate((t) => sessionStorage.setItem("agentlog.token", t), userToken);
    for (const [name, path, heading] of everyPage) {
      await p.goto(`${base}${path}`);
      await p.getByRole("heading", { name: heading }).first().waitFor();
      await p.waitForTimeout(250);
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name} at ${v.width}px (${v.colorScheme}) is ${overflow}px wider than the window`);
      const bg = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
      if (v.colorScheme === "dark") assert.notEqual(bg, "rgb(255, 255, 255)", `${name}: dark theme`);
      else assert.equal(bg, "rgb(255, 255, 255)", `${name}: light theme`);
      if (v.width < 1280 && v.colorScheme === "dark" && narrowShots.has(name)) await shot(p, `${name}-narrow-dark`);
    }
    await p.context().close();
  }

  step("the task's dependency graph: a node per task, an arrow per dependency, each node a link");
  await page.goto(`${base}/tasks/${encodeURIComponent(tb)}`);
  const graph = page.getByRole("group", { name: "Dependencies of this task" });
  await graph.locator(`[data-node="${ta}"]`).waitFor();
  await graph.locator(`[data-edge="${ta}>${tb}"]`).waitFor({ state: "attached" });
  await graph.locator(`a[data-node="${ta}"]`).focus();
  await page.keyboard.press("Enter");
  // A dependency is the task owner's: its link names the owner.
  await page.waitForURL(new RegExp(`/tasks/${ta}\\?owner=[^&]+$`));

  step("sign-out forgets the token");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("Bearer token").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("agentlog.token")), null);

  step("a token revoked while its page is open leads back to sign-in at once");
  const made = (await gql(adminToken, `mutation { createToken(userId: "alice", name: "console") { tokenId secret } }`)).createToken;
  await page.goto(`${base}/runs`);
  await page.getByLabel("Bearer token").fill(made.secret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Runs" }).waitFor();
  await page.waitForTimeout(300); // its live subscription is open
  await gql(adminToken, `mutation($id: String!) { revokeToken(tokenId: $id) }`, { id: made.tokenId });
  await page.getByLabel("Bearer token").waitFor({ timeout: 3000 });
  assert.equal(await page.evaluate(() => sessionStorage.getItem("agentlog.token")), null);

  step("a token the server no longer accepts leads back to sign-in");
  await page.evaluate(() => sessionStorage.setItem("agentlog.token", "revoked-or-made-up"));
  await page.goto(`${base}/inbox`);
  await page.getByLabel("Bearer token").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("agentlog.token")), null);
} catch (e) {
  // What the browser showed, to see why.
  for (const p of pages) {
    if (p.isClosed()) continue;
    console.error(`--- ${p.url()}\n${await p.locator("body").innerText().catch(() => "?")}`);
  }
  console.error(problems.join("\n"));
  throw e;
} finally {
  await browser.close();
}

assert.deepEqual(blocked, [], "requests that left the machine");
assert.deepEqual(problems, [], "console errors");
console.log("console browser test passed");
