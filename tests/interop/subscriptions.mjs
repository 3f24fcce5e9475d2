// Resource subscriptions: clients A and B subscribe to the same server-everything resource, C
// subscribes to nothing. server-everything sends notifications/resources/updated for subscribed
// URIs once when its `toggle-subscriber-updates` tool turns updates on, then every 5 s. Both A
// and B must receive updates; after B unsubscribes only A keeps receiving them (so mcpd may not
// pass B's unsubscribe on while A still holds a subscription), and C never receives any.

import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, fail, sleep, waitFor } from './harness.mjs';

const TOGGLE = 'toggle-subscriber-updates';

await scenario('resource subscriptions', { servers: ['everything'] }, async (ctx) => {
  const updates = { A: [], B: [], C: [] };
  const connect = (label) =>
    ctx.connect('everything', `subscribe-${label}`, {
      setup: (client) =>
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates[label].push(n.params.uri)),
    });
  const [a, b, c] = await Promise.all(['A', 'B', 'C'].map(connect));

  check(a.getServerCapabilities()?.resources?.subscribe, 'server-everything does not announce resources.subscribe');
  const tools = (await a.listTools()).tools.map((t) => t.name);
  check(tools.includes(TOGGLE), `server-everything lists no '${TOGGLE}' tool (has: ${tools.join(', ')})`);
  const resources = (await a.listResources()).resources;
  check(resources.length > 0, 'server-everything lists no resources');
  const uri = resources[0].uri;
  const other = resources.find((r) => r.uri !== uri)?.uri;

  await Promise.all([a.subscribeResource({ uri }), b.subscribeResource({ uri })]);
  log(`A and B subscribed to ${uri}`);

  // The tool flips one switch per server session; through mcpd all clients share the server's
  // one session, so one client's toggle is every client's. With --direct each client has its
  // own server and flips its own.
  const clientOf = { A: a, B: b, C: c };
  const switches = {};
  const toggle = async (label) => {
    const key = ctx.direct ? label : 'shared';
    switches[key] = !switches[key];
    const result = await clientOf[label].callTool({ name: TOGGLE, arguments: {} });
    log(`${label}: ${result.content?.[0]?.text ?? ''}`.slice(0, 110));
  };
  const turnOn = async (label) => {
    if (!switches[ctx.direct ? label : 'shared']) await toggle(label);
  };
  await turnOn('A');
  await turnOn('B');
  await waitFor(() => updates.A.length > 0 && updates.B.length > 0, 8000, 'both A and B to receive an update');
  log(`both got updates (A ${updates.A.length}, B ${updates.B.length})`);
  for (const label of ['A', 'B']) {
    check(updates[label].every((u) => u === uri), `${label} got updates for URIs it did not subscribe to: ${updates[label].join(', ')}`);
  }

  await b.unsubscribeResource({ uri });
  const bAfterUnsubscribe = updates.B.length;
  const aAfterUnsubscribe = updates.A.length;
  log('B unsubscribed');

  // Turning updates off and on again makes the server send one at once.
  await toggle('A');
  await toggle('A');
  await waitFor(
    () => updates.A.length >= aAfterUnsubscribe + 2,
    12000,
    `A (still subscribed) to receive two more updates after B unsubscribed (it has ${updates.A.length - aAfterUnsubscribe})`,
  ).catch((error) => fail(`${error.message}; did B's unsubscribe end A's subscription too?`));
  await sleep(300);
  if (updates.B.length !== bAfterUnsubscribe) {
    fail(`B got ${updates.B.length - bAfterUnsubscribe} update(s) after it unsubscribed`);
  }
  log(`after B unsubscribed: A got ${updates.A.length - aAfterUnsubscribe} more updates, B none`);
  check(updates.C.length === 0, `C subscribed to nothing but got ${updates.C.length} update(s): ${updates.C.join(', ')}`);
  log('C, never subscribed, got none');

  if (other) {
    // A subscription of C's own: C's updates are for its URI only, and A does not get them.
    await c.subscribeResource({ uri: other });
    const aBefore = updates.A.length;
    log(`C subscribed to ${other}`);
    await turnOn('C');
    await waitFor(() => updates.C.length > 0, 8000, `C to receive an update for ${other}`);
    check(updates.C.every((u) => u === other), `C got updates for URIs it did not subscribe to: ${updates.C.join(', ')}`);
    check(updates.A.slice(aBefore).every((u) => u === uri), `A got an update for C's ${other}`);
    check(updates.B.length === bAfterUnsubscribe, 'B got updates after it unsubscribed');
    log('C receives its own updates; A does not get them');
  }
});
