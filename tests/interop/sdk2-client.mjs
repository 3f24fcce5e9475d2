// The SDK's 2.x client (@modelcontextprotocol/client, the split package of the 2.x line, which
// speaks 2026-07-28 as well as the initialize handshake) through `mcpctl connect NAME`, next to
// the 1.x SDK the other scenarios use. With `versionNegotiation: { mode: 'auto' }` it probes
// with server/discover (on a short-lived sibling `mcpctl connect`, a session of its own) and
// then either stays modern or falls back to initialize:
//  - on `modern` (mcpd-demo-server --era=modern) it must end up in the modern era at
//    2026-07-28, list the 2026 tools (touch_tools among them), call echo and add, and get
//    notifications/tools/list_changed on a subscriptions/listen stream after touch_tools;
//  - on `legacy` (--era=legacy) mcpd answers the probe as a legacy server does before
//    initialize (-32601), so the client must fall back to a legacy version, list the legacy
//    tools and call them; the same with the 2.x default mode, which sends initialize at once.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

import { scenario, log, check, waitFor, resultText } from './harness.mjs';

const MODERN_VERSION = '2026-07-28';
const LEGACY_TOOLS = ['echo', 'add', 'slow', 'large', 'log', 'stderr', 'crash', 'sample', 'elicit', 'roots'];

// A 2.x client on `server`, through mcpctl (or on its own copy of the server with --direct).
async function connect(ctx, server, label, clientOptions = {}) {
  const def = ctx.definitions[server];
  const params = ctx.direct
    ? { command: def.command, args: def.args, env: { ...getDefaultEnvironment(), ...def.env }, stderr: 'pipe' }
    : { command: ctx.mcpctl, args: ['--socket', ctx.socket, 'connect', server], stderr: 'pipe' };
  const transport = new StdioClientTransport(params);
  const client = new Client({ name: label, version: '1.0.0' }, clientOptions);
  ctx.addClient(label, client, transport);
  return { client, transport };
}

async function listAndCall(client, label, { modern }) {
  const names = (await client.listTools()).tools.map((t) => t.name);
  const missing = LEGACY_TOOLS.filter((t) => !names.includes(t));
  check(missing.length === 0, `${label}: tools/list lacks ${missing.join(', ')}: ${names.join(', ')}`);
  check(names.includes('touch_tools') === modern, `${label}: tools/list ${modern ? 'lacks' : 'has'} the modern era's touch_tools: ${names.join(', ')}`);
  const text = `hello from ${label}`;
  const echo = await client.callTool({ name: 'echo', arguments: { text } });
  check(resultText(echo) === text, `${label}: echo answered ${JSON.stringify(echo)}`);
  const sum = await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } });
  check(resultText(sum) === '42', `${label}: add 40 + 2 answered ${JSON.stringify(sum)}`);
  log(`${label}: ${names.length} tools listed; echo and add answered`);
}

await scenario('SDK 2.x client on modern and legacy servers', {
  servers: [
    { name: 'modern', demo: ['--era=modern'] },
    { name: 'legacy', demo: ['--era=legacy'] },
  ],
  timeoutSeconds: 60,
}, async (ctx) => {
  const manifest = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', '@modelcontextprotocol', 'client', 'package.json');
  log(`@modelcontextprotocol/client ${JSON.parse(fs.readFileSync(manifest, 'utf8')).version}`);

  // Modern: negotiated by server/discover, then a listen stream for tools list changes.
  const modern = await connect(ctx, 'modern', 'sdk2-auto-modern', { versionNegotiation: { mode: 'auto' } });
  let listChanged = 0;
  modern.client.setNotificationHandler('notifications/tools/list_changed', () => (listChanged += 1));
  await modern.client.connect(modern.transport);
  check(modern.client.getProtocolEra() === 'modern', `sdk2-auto-modern: era ${modern.client.getProtocolEra()} (version ${modern.client.getNegotiatedProtocolVersion()}), not modern`);
  check(modern.client.getNegotiatedProtocolVersion() === MODERN_VERSION, `sdk2-auto-modern: negotiated ${modern.client.getNegotiatedProtocolVersion()}, not ${MODERN_VERSION}`);
  check(modern.client.getServerVersion()?.name === 'mcpd-demo-server', `sdk2-auto-modern: serverInfo ${JSON.stringify(modern.client.getServerVersion())}`);
  log(`sdk2-auto-modern: era modern, ${modern.client.getNegotiatedProtocolVersion()}, server ${modern.client.getServerVersion().name}`);
  await listAndCall(modern.client, 'sdk2-auto-modern', { modern: true });
  const subscription = await modern.client.listen({ toolsListChanged: true });
  await modern.client.callTool({ name: 'touch_tools', arguments: {} });
  await waitFor(() => listChanged > 0, 5000, 'sdk2-auto-modern: notifications/tools/list_changed on its listen stream after touch_tools');
  log('sdk2-auto-modern: touch_tools → notifications/tools/list_changed on its listen stream');
  await subscription.close?.();

  // Legacy: the probe falls back to initialize; and the 2.x default mode, initialize at once.
  for (const [label, options] of [
    ['sdk2-auto-legacy', { versionNegotiation: { mode: 'auto' } }],
    ['sdk2-default-legacy', {}],
  ]) {
    const legacy = await connect(ctx, 'legacy', label, options);
    await legacy.client.connect(legacy.transport);
    const era = legacy.client.getProtocolEra();
    const negotiated = legacy.client.getNegotiatedProtocolVersion();
    check(era === 'legacy', `${label}: era ${era} (version ${negotiated}), not legacy`);
    check(legacy.client.getServerVersion()?.name === 'mcpd-demo-server', `${label}: serverInfo ${JSON.stringify(legacy.client.getServerVersion())}`);
    log(`${label}: era legacy, ${negotiated}, server ${legacy.client.getServerVersion().name}`);
    await listAndCall(legacy.client, label, { modern: false });
  }
});
