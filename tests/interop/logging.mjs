// Log levels per client: A sets logging/setLevel to debug, then B sets it to error, on the same
// server-everything. What that server logs (version 2026.8.31):
//  - one info message each time it handles resources/subscribe: sure to happen, so A must get
//    it and B, at error, must not;
//  - with its `toggle-simulated-logging` tool on, one message of a random level (debug ..
//    emergency) at once and then every 5 s: over ~11 s B may only get those at error or above,
//    and A gets every one B gets, plus the lower ones. A debug-level one among them is down to
//    chance (1 in 8 each), so it is counted when it comes, not required.
// If mcpd passed each client's setLevel on to the shared server, B's "error" would win and A
// would miss the info message.

import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, fail, sleep, waitFor } from './harness.mjs';

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
const rank = (level) => LEVELS.indexOf(level);
const TOGGLE = 'toggle-simulated-logging';

await scenario('log levels per client', { servers: ['everything'] }, async (ctx) => {
  const logs = { A: [], B: [] };
  const connect = (label) =>
    ctx.connect('everything', `logging-${label}`, {
      setup: (client) =>
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) =>
          logs[label].push({ level: n.params.level, data: String(n.params.data) }),
        ),
    });
  const [a, b] = await Promise.all([connect('A'), connect('B')]);
  check(a.getServerCapabilities()?.logging, 'server-everything does not announce the logging capability');
  const tools = (await a.listTools()).tools.map((t) => t.name);
  check(tools.includes(TOGGLE), `server-everything lists no '${TOGGLE}' tool (has: ${tools.join(', ')})`);

  await a.setLoggingLevel('debug');
  await b.setLoggingLevel('error');
  log('A set its level to debug, then B to error');
  const show = (entries) => entries.map((e) => `${e.level}: ${e.data}`).join('\n    ') || '(none)';

  // The sure one: an info message from resources/subscribe.
  const uri = (await a.listResources()).resources[0]?.uri;
  check(uri, 'server-everything lists no resources');
  const aBefore = logs.A.length;
  await a.subscribeResource({ uri });
  await waitFor(
    () => logs.A.slice(aBefore).some((e) => e.level === 'info' && e.data.includes('Subscribe')),
    5000,
    `A (level debug) to receive the server's info-level log of its resources/subscribe; A got:\n    ${show(logs.A)}`,
  );
  log(`A got the info-level log: ${logs.A.find((e) => e.data.includes('Subscribe')).data}`);
  await a.unsubscribeResource({ uri });
  await sleep(300);
  const belowError = logs.B.filter((e) => rank(e.level) < rank('error'));
  if (belowError.length > 0) fail(`B (level error) received messages below error:\n    ${show(belowError)}`);
  log('B (level error) got neither the subscribe nor the unsubscribe info log');

  // The random ones.
  const aStart = logs.A.length;
  const bStart = logs.B.length;
  const clientOf = { A: a, B: b };
  const toggled = [];
  for (const label of ctx.direct ? ['A', 'B'] : ['A']) {
    const result = await clientOf[label].callTool({ name: TOGGLE, arguments: {} });
    toggled.push(label);
    log(`${label}: ${result.content?.[0]?.text ?? ''}`.slice(0, 110));
  }
  await sleep(11000);
  for (const label of toggled) await clientOf[label].callTool({ name: TOGGLE, arguments: {} });
  await sleep(300);

  const aSim = logs.A.slice(aStart);
  const bSim = logs.B.slice(bStart);
  log(`A got ${aSim.length} simulated messages: ${aSim.map((e) => e.level).join(', ')}`);
  log(`B got ${bSim.length} simulated messages: ${bSim.map((e) => e.level).join(', ')}`);
  check(aSim.length >= 2, `A (level debug) received only ${aSim.length} simulated log messages in 11 s (expected 3: one at once, one every 5 s)`);
  const bLow = bSim.filter((e) => rank(e.level) < rank('error'));
  if (bLow.length > 0) fail(`B (level error) received messages below error:\n    ${show(bLow)}`);
  if (!ctx.direct) {
    // One server session, so the same messages: what B got at error or above, A got too.
    const aHigh = aSim.filter((e) => rank(e.level) >= rank('error')).map((e) => e.level).join(',');
    check(aHigh === bSim.map((e) => e.level).join(','), `A's messages at error or above (${aHigh}) differ from B's (${bSim.map((e) => e.level).join(',')})`);
  }
  const debug = aSim.filter((e) => e.level === 'debug').length;
  log(`B got only error and above; A got every one sent${debug ? ` (${debug} at debug)` : ' (no debug one came up this time)'}`);
});
