// Groups with members of both eras, and a client of the stateless era: the SDK's 2.x client
// (@modelcontextprotocol/client) through `mcpctl connect mixed`, a group of a 2026-07-28 server
// (mcpd-demo-server --era=modern) and a legacy one (--era=legacy), and through
// `mcpctl connect modern legacy`. With `versionNegotiation: { mode: 'auto' }` it probes with
// server/discover and must settle in the modern era; it lists both members' tools under their
// prefixes (the modern era's touch_tools among them), calls each member, and hears
// notifications/tools/list_changed on its subscriptions/listen stream when the modern member's
// tools change.

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { scenario, allToolNames, log, check, waitFor, resultText } from './harness.mjs';

const MODERN_VERSION = '2026-07-28';

await scenario('groups: a 2026-07-28 client over modern and legacy members', {
  servers: [
    { name: 'modern', demo: ['--era=modern', '--tick-ms=0'] },
    { name: 'legacy', demo: ['--era=legacy', '--tick-ms=0'] },
  ],
  extraToml: '[groups.mixed]\nservers = ["modern", "legacy"]\n',
  groups: ['mixed'],
  timeoutSeconds: 60,
}, async (ctx) => {
  check(!ctx.direct, 'groups need mcpd: --direct does not apply');
  for (const [label, names] of [['sdk2-group', ['mixed']], ['sdk2-adhoc', ['modern', 'legacy']]]) {
    const transport = new StdioClientTransport({
      command: ctx.mcpctl, args: ['--socket', ctx.socket, 'connect', ...names], stderr: 'pipe',
    });
    const client = new Client({ name: label, version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    ctx.addClient(label, client, transport);
    let listChanged = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => (listChanged += 1));
    await client.connect(transport);
    check(client.getProtocolEra() === 'modern', `${label}: era ${client.getProtocolEra()} (version ${client.getNegotiatedProtocolVersion()}), not modern`);
    check(client.getNegotiatedProtocolVersion() === MODERN_VERSION, `${label}: negotiated ${client.getNegotiatedProtocolVersion()}`);
    const expected = names.join('+');
    check(client.getServerVersion()?.name === expected, `${label}: serverInfo ${JSON.stringify(client.getServerVersion())}, not ${expected}`);

    const tools = await allToolNames(client);
    for (const name of ['modern__touch_tools', 'modern__echo', 'legacy__echo', 'legacy__add']) {
      check(tools.includes(name), `${label}: tools/list lacks ${name}: ${tools.join(', ')}`);
    }
    const echo = await client.callTool({ name: 'modern__echo', arguments: { text: 'to the modern member' } });
    check(resultText(echo) === 'to the modern member', `${label}: modern echo answered ${JSON.stringify(echo)}`);
    const sum = await client.callTool({ name: 'legacy__add', arguments: { a: 40, b: 2 } });
    check(resultText(sum) === '42', `${label}: legacy add answered ${JSON.stringify(sum)}`);
    log(`${label}: modern era, ${tools.length} tools, both members answer`);

    const subscription = await client.listen({ toolsListChanged: true });
    await client.callTool({ name: 'modern__touch_tools', arguments: {} });
    await waitFor(() => listChanged > 0, 5000, `${label}: notifications/tools/list_changed on its listen stream after touch_tools`);
    log(`${label}: touch_tools → notifications/tools/list_changed on the group's listen stream`);
    await subscription.close?.();
  }
});
