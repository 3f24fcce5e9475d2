// A dual-era server (mcpd-demo-server --era=dual, registry era left at auto) has a legacy client
// and a modern one at once. mcpd's server/discover probe makes the pooled process modern, yet a
// client that sends `initialize` (the pinned SDK 1.x Client, through `mcpctl connect dual`) must
// get everything a legacy client of a legacy server gets: the InitializeResult (a legacy
// protocolVersion, the demo server's serverInfo, capabilities with logging), the legacy tools
// list, tools/call, logging/setLevel applied to the tool's logs, resources/subscribe and its
// notifications/resources/updated, server→client requests (roots/list, sampling/createMessage,
// elicitation/create) answered by its own handlers, ping, and after `mcpctl restart dual`
// notifications/tools/list_changed with its subscription and log level kept (the demo server has
// no tool that changes its list in the legacy era; a restart is when mcpd announces one). All the
// while a 2026-07-28 session, hand-written JSON lines over a second `mcpctl connect dual` (the
// SDK 1.x has no 2026 client), keeps working: server/discover, tools/call with the per-request
// _meta, a subscriptions/listen stream told of touch_tools' list change, logs asked for with
// _meta logLevel, before, during and after the legacy client's checks, and after the restart
// (its open stream ended with notifications/cancelled, a new one working); neither session may
// see the other's traffic.
//
// Every check is run and reported; the scenario fails at the end naming those that failed.

import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { META, MODERN_VERSION, modernMeta } from './line-session.mjs';
import { scenario, log, check, fail, sleep, waitFor, resultText, ScenarioError } from './harness.mjs';

const SERVER = 'dual';
const LEGACY_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
const LEGACY_TOOLS = ['echo', 'add', 'slow', 'large', 'log', 'stderr', 'crash', 'sample', 'elicit', 'roots'];
const MODERN_ONLY_TOOLS = ['touch_tools', 'end_streams'];
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const ROOT = 'file:///interop/legacy-root';
const COUNTER = 'demo://counter';
const NONCE = Math.random().toString(36).slice(2, 8);

// Runs the named checks, records each outcome, and says at the end which failed.
class Checks {
  constructor() {
    this.results = [];
  }

  async run(name, body) {
    try {
      const detail = await body();
      this.results.push({ name, ok: true });
      log(`ok      ${name}${detail ? `: ${detail}` : ''}`);
      return true;
    } catch (error) {
      const message = error instanceof ScenarioError || error instanceof Error ? error.message : String(error);
      this.results.push({ name, ok: false, message });
      log(`FAILED  ${name}: ${message}`);
      return false;
    }
  }

  skip(names, reason) {
    for (const name of names) {
      this.results.push({ name, ok: false, message: `not run: ${reason}` });
      log(`NOT RUN ${name}: ${reason}`);
    }
  }

  report() {
    const failed = this.results.filter((r) => !r.ok);
    const count = (side) => {
      const all = this.results.filter((r) => r.name.startsWith(side));
      return `${side} ${all.length - all.filter((r) => !r.ok).length}/${all.length} passed`;
    };
    log(`${count('legacy')}, ${count('modern')}, ${this.results.length - failed.length}/${this.results.length} in all`);
    if (failed.length > 0) {
      fail(`${failed.length} of ${this.results.length} checks failed (${count('legacy')}, ${count('modern')}):\n` +
        failed.map((r) => `  ${r.name}: ${r.message}`).join('\n'));
    }
  }
}

// --- The modern session: JSON lines with the 2026-07-28 _meta on every request.

function modernResult(reply, what) {
  if (reply.error) fail(`${what} answered error ${reply.error.code}: ${reply.error.message}`);
  return reply.result;
}

async function modernCall(modern, name, args, metaOptions) {
  const reply = await modern.request('tools/call', { name, arguments: args, _meta: modernMeta('modern', metaOptions) });
  return modernResult(reply, `tools/call ${name}`);
}

// server/discover and an echo tools/call: the modern era's basics.
async function modernRound(modern, when) {
  const discover = modernResult(await modern.request('server/discover', { _meta: modernMeta('modern') }), 'server/discover');
  check(discover.supportedVersions?.includes(MODERN_VERSION), `server/discover offers ${JSON.stringify(discover.supportedVersions)}, not ${MODERN_VERSION}`);
  const text = `modern ${when} ${NONCE}`;
  const result = await modernCall(modern, 'echo', { text });
  check(resultText(result) === text, `echo answered ${JSON.stringify(result)}`);
  check(result.resultType === 'complete', `the echo result has resultType ${JSON.stringify(result.resultType)}, not "complete"`);
  check(result._meta?.[META.serverInfo]?.name === 'mcpd-demo-server', `the echo result's _meta names no serverInfo: ${JSON.stringify(result._meta)}`);
  return `supportedVersions ${JSON.stringify(discover.supportedVersions)}, echo answered with resultType complete`;
}

// A subscriptions/listen stream for tools list changes, acknowledged; returns its id.
async function openListen(modern, id) {
  const from = modern.received.length;
  const reply = modern.expectReply(id);
  modern.send({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: { notifications: { toolsListChanged: true }, _meta: modernMeta('modern') },
  });
  const ack = await Promise.race([
    modern.waitFor(
      (m) => m.method === 'notifications/subscriptions/acknowledged' && m.params?._meta?.[META.subscriptionId] === id,
      10000,
      `the acknowledgement of subscriptions/listen ${id}`,
      from,
    ),
    reply.then((r) => fail(`subscriptions/listen ${id} was answered before any acknowledgement: ${JSON.stringify(r.error ?? r.result)}`)),
  ]);
  check(ack.params?.notifications?.toolsListChanged === true, `listen ${id} acknowledged without toolsListChanged: ${JSON.stringify(ack.params)}`);
}

// touch_tools: notifications/tools/list_changed on the listen stream `id`, as its own.
async function modernListChanged(modern, id) {
  const from = modern.received.length;
  const result = await modernCall(modern, 'touch_tools', {});
  await modern.waitFor(
    (m) => m.method === 'notifications/tools/list_changed' && m.params?._meta?.[META.subscriptionId] === id,
    5000,
    `notifications/tools/list_changed on listen stream ${JSON.stringify(id)} after touch_tools (${resultText(result)})`,
    from,
  );
  return `touch_tools (${resultText(result)}) → notifications/tools/list_changed on stream ${JSON.stringify(id)}`;
}

// The log tool with _meta logLevel info: the warning arrives, the debug one does not.
async function modernLogging(modern) {
  const from = modern.received.length;
  const warning = `modern warning ${NONCE}`;
  const debug = `modern debug ${NONCE}`;
  await modernCall(modern, 'log', { level: 'warning', message: warning }, { logLevel: 'info' });
  await modernCall(modern, 'log', { level: 'debug', message: debug }, { logLevel: 'info' });
  await modern.waitFor((m) => m.method === 'notifications/message' && m.params?.data === warning, 5000, `the warning log of its own tools/call (logLevel info)`, from);
  await sleep(200);
  const low = modern.received.slice(from).filter((m) => m.method === 'notifications/message' && m.params?.data === debug);
  check(low.length === 0, `a debug log arrived for a request that asked for info and above`);
  return 'warning log delivered with _meta logLevel info, debug one not';
}

// What the modern session may receive: its own stream's and its own calls' messages.
function strayModernMessages(modern, listenIds) {
  return modern.received.filter((m) => {
    const subscription = m.params?._meta?.[META.subscriptionId];
    if (m.method === 'notifications/subscriptions/acknowledged' || m.method === 'notifications/tools/list_changed') {
      return !listenIds.includes(subscription);
    }
    if (m.method === 'notifications/cancelled') return !listenIds.includes(m.params?.requestId);
    if (m.method === 'notifications/message') return !String(m.params?.data).startsWith('modern ');
    return true;
  });
}

// --- The legacy client: the SDK 1.x Client through `mcpctl connect dual`.

function legacyObserver() {
  const seen = { logs: [], updates: [], toolsChanged: 0, roots: 0, sampling: [], elicitation: [] };
  const setup = (client) => {
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => seen.logs.push({ level: n.params.level, data: String(n.params.data) }));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => seen.updates.push(n.params.uri));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => (seen.toolsChanged += 1));
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      seen.roots += 1;
      return { roots: [{ uri: ROOT, name: 'legacy root' }] };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      seen.sampling.push(request.params.messages.map((m) => m.content?.text ?? '').join(' '));
      return { model: 'interop-legacy-model', role: 'assistant', content: { type: 'text', text: `sampled by legacy ${NONCE}` } };
    });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      seen.elicitation.push(request.params.message);
      return { action: 'accept', content: { answer: `legacy answer ${NONCE}` } };
    });
  };
  return { seen, setup };
}

async function legacyCall(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 15000 });
  check(!result.isError, `${name} failed: ${resultText(result)}`);
  return resultText(result);
}

// Logs of the log tool at each level: those at `level` and above arrive, none below.
async function legacyLogging(client, seen, level) {
  await client.setLoggingLevel(level);
  const from = seen.logs.length;
  const sent = LEVELS.map((l) => ({ level: l, data: `legacy ${l} ${NONCE} ${Math.random().toString(36).slice(2, 6)}` }));
  for (const entry of sent) await legacyCall(client, 'log', { level: entry.level, message: entry.data });
  const expected = sent.filter((e) => LEVELS.indexOf(e.level) >= LEVELS.indexOf(level));
  await waitFor(
    () => expected.every((e) => seen.logs.slice(from).some((g) => g.data === e.data)),
    5000,
    `notifications/message at ${level} and above (got: ${seen.logs.slice(from).map((g) => g.level).join(', ') || 'none'})`,
  );
  await sleep(200);
  const got = seen.logs.slice(from);
  const below = got.filter((g) => LEVELS.indexOf(g.level) < LEVELS.indexOf(level));
  check(below.length === 0, `after logging/setLevel ${level}, logs below it arrived: ${below.map((g) => g.level).join(', ')}`);
  const foreign = got.filter((g) => !sent.some((e) => e.data === g.data));
  check(foreign.length === 0, `logs that are not its own tool's arrived: ${foreign.map((g) => g.data).join(' | ')}`);
  return `setLevel ${level}: got ${got.map((g) => g.level).join(', ')}`;
}

async function legacySubscription(client, seen) {
  const from = seen.updates.length;
  await client.subscribeResource({ uri: COUNTER });
  await waitFor(() => seen.updates.length > from, 5000, `notifications/resources/updated for ${COUNTER} after resources/subscribe`);
  check(seen.updates.slice(from).every((u) => u === COUNTER), `updates for URIs not subscribed: ${seen.updates.slice(from).join(', ')}`);
  await client.unsubscribeResource({ uri: COUNTER });
  await sleep(400);
  const settled = seen.updates.length;
  await sleep(1000);
  check(seen.updates.length === settled, `${seen.updates.length - settled} update(s) in the second after resources/unsubscribe`);
  return `${settled - from} update(s) while subscribed, none after unsubscribing`;
}

async function legacyServerRequests(client, seen) {
  const roots = await legacyCall(client, 'roots', {});
  check(roots.includes(ROOT) && seen.roots === 1, `roots answered "${roots}" (its roots/list handler called ${seen.roots} times)`);
  const prompt = `legacy prompt ${NONCE}`;
  const sampled = await legacyCall(client, 'sample', { prompt });
  check(sampled.includes(`sampled by legacy ${NONCE}`) && seen.sampling.some((p) => p.includes(prompt)), `sample answered "${sampled}" (handler saw: ${seen.sampling.join(' | ')})`);
  const elicited = await legacyCall(client, 'elicit', { message: `legacy question ${NONCE}` });
  check(elicited.includes(`legacy answer ${NONCE}`) && seen.elicitation.length === 1, `elicit answered "${elicited}" (handler called ${seen.elicitation.length} times)`);
  return 'roots/list, sampling/createMessage and elicitation/create answered by its own handlers';
}

// Before a restart: a subscription and level error, which the restart must keep.
async function legacyBeforeRestart(client, seen) {
  await client.subscribeResource({ uri: COUNTER });
  await client.setLoggingLevel('error');
  return seen.toolsChanged;
}

// After a restart mcpd tells legacy sessions their lists may have changed and restores their
// subscriptions and log level.
async function legacyAfterRestart(client, seen, changedBefore) {
  await waitFor(() => seen.toolsChanged > changedBefore, 20000, 'notifications/tools/list_changed after the restart');
  const updatesFrom = seen.updates.length;
  await waitFor(() => seen.updates.length > updatesFrom, 5000, `notifications/resources/updated for ${COUNTER} after the restart (subscription restored)`);
  const logsFrom = seen.logs.length;
  const warning = `legacy warning after restart ${NONCE}`;
  const error = `legacy error after restart ${NONCE}`;
  await legacyCall(client, 'log', { level: 'warning', message: warning });
  await legacyCall(client, 'log', { level: 'error', message: error });
  await waitFor(() => seen.logs.slice(logsFrom).some((g) => g.data === error), 5000, 'the error log after the restart');
  await sleep(200);
  check(!seen.logs.slice(logsFrom).some((g) => g.data === warning), 'a warning log arrived after the restart: the level set before it (error) was not restored');
  await client.unsubscribeResource({ uri: COUNTER });
  check((await legacyCall(client, 'echo', { text: `after restart ${NONCE}` })) === `after restart ${NONCE}`, 'echo after the restart');
  return 'tools list_changed arrived; subscription and log level error kept; echo works';
}

await scenario('legacy and modern clients of one dual-era server', {
  servers: [{ name: SERVER, demo: ['--era=dual', '--tick-ms=200'] }],
  timeoutSeconds: 100,
}, async (ctx) => {
  const checks = new Checks();
  const listenIds = ['modern-listen-1'];

  // The modern session first: mcpd's probe has made the shared process modern already.
  const modern = ctx.connectLines(SERVER, 'modern');
  await checks.run('modern: server/discover and tools/call before the legacy client', () => modernRound(modern, 'before'));
  await checks.run('modern: tools/list is the 2026 list', async () => {
    const result = modernResult(await modern.request('tools/list', { _meta: modernMeta('modern') }), 'tools/list');
    const names = result.tools.map((t) => t.name);
    check(MODERN_ONLY_TOOLS.every((t) => names.includes(t)), `tools/list lacks ${MODERN_ONLY_TOOLS.join(', ')}: ${names.join(', ')}`);
    return `${names.length} tools, touch_tools among them`;
  });
  await checks.run('modern: subscriptions/listen stream acknowledged', () => openListen(modern, listenIds[0]));
  await checks.run('modern: logs asked for with _meta logLevel', () => modernLogging(modern));

  // The legacy client, while the modern session keeps calling.
  const { seen, setup } = legacyObserver();
  let legacy = null;
  let legacyDone = false;
  const modernCalls = [];
  const modernDuring = (async () => {
    while (!legacyDone) {
      modernCalls.push(await modernRound(modern, `during ${modernCalls.length}`).then(() => null, (error) => error.message));
      await sleep(100);
    }
  })();
  const legacyChecks = [
    'legacy: tools/list is the legacy list',
    'legacy: tools/call',
    'legacy: logging/setLevel applies to the tool\'s logs',
    'legacy: resources/subscribe → notifications/resources/updated',
    'legacy: server→client requests answered by its handlers',
    'legacy: ping',
  ];
  const initialized = await checks.run('legacy: initialize answered as by a legacy server', async () => {
    legacy = await ctx.connect(SERVER, 'legacy', { capabilities: { roots: { listChanged: false }, sampling: {}, elicitation: {} }, setup });
    const version = ctx.protocolVersion(legacy);
    const info = legacy.getServerVersion();
    const caps = legacy.getServerCapabilities() ?? {};
    check(LEGACY_VERSIONS.includes(version), `protocolVersion ${JSON.stringify(version)} is not a legacy one`);
    check(info?.name === 'mcpd-demo-server', `serverInfo ${JSON.stringify(info)} is not the demo server's`);
    check(caps.tools?.listChanged && caps.resources?.subscribe && caps.logging, `capabilities ${JSON.stringify(caps)} lack tools.listChanged, resources.subscribe or logging`);
    check(!String(legacy.getInstructions() ?? '').includes('2026-07-28'), `the instructions are the modern era's: ${legacy.getInstructions()}`);
    return `protocolVersion ${version}, serverInfo ${info.name} ${info.version}, capabilities ${Object.keys(caps).join(', ')}`;
  });
  if (initialized) {
    await checks.run(legacyChecks[0], async () => {
      const names = (await legacy.listTools()).tools.map((t) => t.name);
      const missing = LEGACY_TOOLS.filter((t) => !names.includes(t));
      const modernOnly = MODERN_ONLY_TOOLS.filter((t) => names.includes(t));
      check(missing.length === 0 && modernOnly.length === 0, `tools/list has ${names.join(', ')}` +
        `${missing.length ? `; lacks ${missing.join(', ')}` : ''}${modernOnly.length ? `; has the modern era's ${modernOnly.join(', ')}` : ''}`);
      return names.join(', ');
    });
    await checks.run(legacyChecks[1], async () => {
      const text = `legacy echo ${NONCE}`;
      check((await legacyCall(legacy, 'echo', { text })) === text, 'echo did not return its text');
      const sum = await legacyCall(legacy, 'add', { a: 20, b: 22 });
      check(sum === '42', `add 20 + 22 answered ${sum}`);
      return 'echo and add answered';
    });
    await checks.run(legacyChecks[2], async () => `${await legacyLogging(legacy, seen, 'warning')}; ${await legacyLogging(legacy, seen, 'debug')}`);
    await checks.run(legacyChecks[3], () => legacySubscription(legacy, seen));
    await checks.run(legacyChecks[4], () => legacyServerRequests(legacy, seen));
    await checks.run(legacyChecks[5], async () => {
      await legacy.ping();
    });
  } else {
    checks.skip(legacyChecks, 'the legacy client never got through initialize');
  }
  legacyDone = true;
  await modernDuring;
  await checks.run('modern: server/discover and tools/call while the legacy client ran', async () => {
    const failures = modernCalls.filter((m) => m !== null);
    check(failures.length === 0, `${failures.length} of ${modernCalls.length} rounds failed: ${failures.slice(0, 3).join(' | ')}`);
    return `${modernCalls.length} rounds`;
  });
  await checks.run('modern: server/discover and tools/call after the legacy client', () => modernRound(modern, 'after'));
  await checks.run('modern: touch_tools → list_changed on its listen stream', () => modernListChanged(modern, listenIds[0]));

  const restartCheck = 'legacy: after mcpctl restart, tools list_changed, subscription and log level kept';
  if (ctx.direct) {
    log('--direct: no mcpd to restart; the restart checks are left out');
  } else {
    const before = initialized ? await legacyBeforeRestart(legacy, seen).then((n) => ({ n }), (error) => ({ error })) : null;
    await checks.run(`mcpctl restart ${SERVER} --wait`, async () => {
      ctx.runMcpctl(['restart', SERVER, '--wait', '--timeout', '20s']);
    });
    if (before) {
      await checks.run(restartCheck, () => {
        if (before.error) fail(`before the restart: ${before.error.message}`);
        return legacyAfterRestart(legacy, seen, before.n);
      });
    } else {
      checks.skip([restartCheck], 'the legacy client never got through initialize');
    }
    await checks.run('modern: the listen stream open across the restart ended with notifications/cancelled', async () => {
      await modern.waitFor((m) => m.method === 'notifications/cancelled' && m.params?.requestId === listenIds[0], 5000, `notifications/cancelled for ${listenIds[0]}`);
    });
    await checks.run('modern: server/discover and tools/call after the restart', () => modernRound(modern, 'after restart'));
    listenIds.push('modern-listen-2');
    await checks.run('modern: a new listen stream gets list_changed after the restart', async () => {
      await openListen(modern, listenIds[1]);
      return modernListChanged(modern, listenIds[1]);
    });
  }

  // A 2026 client ends its streams with notifications/cancelled: mcpd keeps a session whose
  // client closed its input until its requests are answered, and a listen stream never is.
  for (const id of listenIds) modern.notify('notifications/cancelled', { requestId: id, reason: 'scenario over' });

  await checks.run('modern: received nothing of the legacy client\'s', async () => {
    const stray = strayModernMessages(modern, listenIds);
    check(stray.length === 0, `${stray.length} message(s) not its own: ${stray.slice(0, 3).map((m) => JSON.stringify(m).slice(0, 200)).join(' | ')}`);
    return `${modern.received.length} notifications, all its own`;
  });
  if (!ctx.direct) log(`${ctx.serverPids(SERVER).length} mcpd-demo-server process(es) below mcpd`);
  checks.report();
});
