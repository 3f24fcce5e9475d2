// Groups: SDK clients through `mcpctl connect dev`, a registry group of server-everything,
// server-memory and server-filesystem (one child per project), and through
// `mcpctl connect everything memory`. Tools of every member are callable under their prefixed
// names, filtered ones are absent and refused, resources are read and subscribed through the
// member that has them, progress and cancellation stay exact with two concurrent clients, and
// a member's restart reaches the clients as list_changed; all of it on both entries.

import fs from 'node:fs';
import path from 'node:path';
import {
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { scenario, allToolNames, log, check, fail, waitFor, resultText } from './harness.mjs';

// server-memory's own filter hides its delete tools wherever it is used; the group also hides
// server-everything's get-env, and shows two of server-filesystem's tools.
const GROUP = `
[groups.dev]
servers = ["everything", "memory", "filesystem"]
exclude_tools = ["get-env"]

[groups.dev.filesystem]
tools = ["read_text_file", "list_directory"]
`;

const LONG = 'everything__trigger-long-running-operation';

// Every resource URI, following nextCursor to the end.
async function allResources(client) {
  const uris = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const result = await client.listResources(cursor ? { cursor } : {});
    uris.push(...result.resources.map((r) => r.uri));
    if (!result.nextCursor) return uris;
    cursor = result.nextCursor;
  }
  fail('resources/list did not end');
}

// Per client, the final progress notifications the SDK reported as "unknown token" because
// they arrived after the result; any other client-side error fails the scenario.
function lateFinalProgress(ctx, expected) {
  const late = {};
  const unexpected = ctx.takeClientErrors((e) => {
    const match = /unknown token: (\{.*\})/s.exec(e.error);
    const run = expected.find((r) => r.client === e.client);
    if (!match || !run) return false;
    const { params } = JSON.parse(match[1]);
    if (params?.total !== run.steps || params?.progress !== run.steps) return false;
    late[run.client] = (late[run.client] ?? 0) + 1;
    return true;
  });
  if (unexpected.length > 0) fail(`client-side protocol errors:\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  return late;
}

async function refusedCode(promise) {
  try {
    const result = await promise;
    return `no error (result: ${resultText(result)})`;
  } catch (error) {
    return error?.code;
  }
}

// The checks, with two concurrent clients A and B on `target` (a group name, or the servers of
// `mcpctl connect a b`), whose tools must include `present` and exclude `hidden`.
async function checkGroup(ctx, target, { label, project, present, hidden, serverName }) {
  const events = { A: { updates: [], changed: 0 }, B: { updates: [], changed: 0 } };
  const connect = (who) =>
    ctx.connect(target, `${label}-${who}`, {
      cwd: project,
      setup: (client) => {
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => events[who].updates.push(n.params.uri));
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => events[who].changed++);
      },
    });
  const [a, b] = await Promise.all([connect('A'), connect('B')]);
  check(a.getServerVersion()?.name === serverName, `${label}: serverInfo names ${JSON.stringify(a.getServerVersion())}, not ${serverName}`);
  const caps = a.getServerCapabilities();
  check(caps?.tools && caps?.resources && caps?.prompts, `${label}: the capabilities miss a member's: ${JSON.stringify(caps)}`);

  // Names: prefixed and filtered.
  const names = await allToolNames(a);
  log(`${label}: A lists ${names.length} tools: ${names.join(', ')}`.slice(0, 300));
  for (const name of present) check(names.includes(name), `${label}: no '${name}' in the list`);
  for (const name of hidden) check(!names.includes(name), `${label}: '${name}' is listed, which a filter hides`);
  check(new Set(names).size === names.length, `${label}: a tool is listed twice`);
  check(names.every((n) => /^[a-zA-Z0-9_-]{1,128}$/.test(n)), `${label}: a tool name does not match ^[a-zA-Z0-9_-]{1,128}$`);
  check((await allToolNames(b)).join() === names.join(), `${label}: B lists other tools than A`);

  // Calls reach their member.
  const echo = await a.callTool({ name: 'everything__echo', arguments: { message: 'through the group' } });
  check(resultText(echo) === 'Echo: through the group', `${label}: echo answered ${resultText(echo)}`);
  const tag = Math.random().toString(36).slice(2, 8);
  await b.callTool({ name: 'memory__create_entities', arguments: { entities: [{ name: `g-${tag}`, entityType: 'test', observations: ['by B'] }] } });
  const graph = await a.callTool({ name: 'memory__read_graph', arguments: {} });
  check(resultText(graph).includes(`g-${tag}`), `${label}: A does not see B's entity`);
  if (present.includes('filesystem__read_text_file')) {
    const file = await a.callTool({ name: 'filesystem__read_text_file', arguments: { path: path.join(project, 'notes.txt') } });
    check(resultText(file).includes('group notes'), `${label}: read_text_file answered ${resultText(file)}`);
  }

  // Filtered or unknown: refused as a server refuses an unknown tool.
  for (const name of [...hidden, 'nosuch__tool']) {
    const code = await refusedCode(a.callTool({ name, arguments: {} }));
    check(code === -32602, `${label}: calling '${name}' gave ${code}, not -32602`);
  }
  log(`${label}: calls reach their members; hidden and unknown tools are refused with -32602`);

  // Resources through the member that lists them; a subscription's updates to A alone.
  const uris = await allResources(a);
  const uri = uris.find((u) => u.startsWith('demo://resource/static')) ?? uris[0];
  check(uri, `${label}: no resources listed`);
  const read = await a.readResource({ uri });
  check(read.contents?.length > 0, `${label}: reading ${uri} gave nothing`);
  await a.subscribeResource({ uri });
  await a.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
  await waitFor(() => events.A.updates.includes(uri), 10000, `${label}: A to hear of ${uri}`);
  check(events.B.updates.length === 0, `${label}: B got updates it did not subscribe to: ${events.B.updates.join(', ')}`);
  await a.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
  await a.unsubscribeResource({ uri });
  log(`${label}: ${uri} read and subscribed through server-everything`);

  // Progress: A and B run the long tool at once with the same request ids and tokens.
  const runs = [
    { client: a, who: 'A', steps: 3, progress: [] },
    { client: b, who: 'B', steps: 5, progress: [] },
  ];
  await Promise.all(runs.map(async (run) => {
    const result = await run.client.callTool({ name: LONG, arguments: { duration: 1, steps: run.steps } }, undefined, {
      onprogress: (p) => run.progress.push(p.progress),
      timeout: 30000,
    });
    check(resultText(result).includes(`Steps: ${run.steps}`), `${label}: ${run.who}: ${resultText(result)}`);
  }));
  // The SDK handles a notification a tick after the response it precedes: the final one may
  // come "late" (an "unknown token" error of that client), and counts as received.
  const late = lateFinalProgress(ctx, runs.map((run) => ({ client: `${label}-${run.who}`, steps: run.steps })));
  for (const run of runs) {
    const got = run.progress.length + (late[`${label}-${run.who}`] ?? 0);
    check(run.progress.every((p, k) => p === k + 1), `${label}: ${run.who}: progress not its own: ${run.progress.join(' ')}`);
    check(got === run.steps, `${label}: ${run.who} got ${got} progress notifications for ${run.steps} steps`);
  }
  log(`${label}: progress exact for A and B`);

  // Cancellation: A aborts its call after the first progress; B's goes on to the end.
  const controller = new AbortController();
  const aborted = a.callTool({ name: LONG, arguments: { duration: 3, steps: 6 } }, undefined, {
    signal: controller.signal,
    onprogress: () => controller.abort('the test cancels it'),
    timeout: 30000,
  }).then(() => 'resolved', () => 'rejected');
  const whole = b.callTool({ name: LONG, arguments: { duration: 1, steps: 2 } }, undefined, { timeout: 30000 });
  check((await aborted) === 'rejected', `${label}: the aborted call was not rejected`);
  check(resultText(await whole).includes('Steps: 2'), `${label}: B's call did not finish`);
  lateFinalProgress(ctx, [{ client: `${label}-B`, steps: 2 }]);
  const after = await a.callTool({ name: 'everything__echo', arguments: { message: 'after cancel' } });
  check(resultText(after) === 'Echo: after cancel', `${label}: A cannot call after its cancel`);
  log(`${label}: a cancelled call ends for A alone`);

  // A member's restart: list_changed, and its tools come back.
  const changedBefore = events.A.changed;
  ctx.runMcpctl(['restart', 'memory']);
  await waitFor(() => events.A.changed > changedBefore, 15000, `${label}: A to hear tools/list_changed when memory restarts`);
  await ctx.waitRunning('memory');
  await waitFor(async () => (await allToolNames(a)).includes('memory__read_graph'), 15000, `${label}: memory's tools to come back`);
  const again = await a.callTool({ name: 'memory__read_graph', arguments: {} });
  check(!again.isError && resultText(again).includes(`g-${tag}`), `${label}: memory__read_graph after the restart: ${resultText(again).slice(0, 100)}`);
  log(`${label}: memory restarted: list_changed, then its tools are back`);

  const sessions = ctx.mcpctlJson(['sessions']).sessions.filter((s) => s.server === serverName);
  check(sessions.length === 2, `${label}: mcpctl sessions lists ${sessions.length} ${serverName} sessions`);
  await Promise.all([a.close(), b.close()]);
}

await scenario(
  'groups: one session over server-everything, server-memory and server-filesystem',
  {
    servers: ['everything', 'memory', 'filesystem'],
    serverSettings: { memory: { exclude_tools: '["delete_*"]' } },
    extraToml: GROUP,
    groups: ['dev'],
    timeoutSeconds: 150,
  },
  async (ctx) => {
    check(!ctx.direct, 'groups need mcpd: --direct does not apply');
    const project = fs.realpathSync(fs.mkdtempSync(path.join(ctx.tmp, 'project-')));
    fs.writeFileSync(path.join(project, 'notes.txt'), 'group notes\n');
    await checkGroup(ctx, 'dev', {
      label: 'dev',
      project,
      serverName: 'dev',
      present: ['everything__echo', LONG, 'memory__create_entities', 'memory__read_graph',
        'filesystem__read_text_file', 'filesystem__list_directory'],
      hidden: ['everything__get-env', 'memory__delete_entities', 'filesystem__write_file', 'echo'],
    });
    // The same through an ad-hoc group: only the servers' own filters.
    await checkGroup(ctx, ['everything', 'memory'], {
      label: 'adhoc',
      project,
      serverName: 'everything+memory',
      present: ['everything__echo', 'everything__get-env', LONG, 'memory__create_entities', 'memory__read_graph'],
      hidden: ['memory__delete_entities', 'filesystem__read_text_file'],
    });
  },
);
