// The SDK's 2.x client (@modelcontextprotocol/client) over mcpd's Streamable HTTP front door,
// configured as its users do: a URL and the bearer token `mcpctl http-token` prints. With
// `versionNegotiation: { mode: 'auto' }` it probes the era itself:
//  - on `modern` (mcpd-demo-server --era=modern) it must end up in the 2026-07-28 era (each
//    request a POST of its own, its metadata in headers mcpd checks), list the 2026 tools, call
//    echo and add, and get notifications/tools/list_changed on a subscriptions/listen stream
//    after touch_tools;
//  - on `legacy` (--era=legacy) mcpd answers the stateless request as a legacy-only server
//    (UnsupportedProtocolVersion with the versions it speaks), so the client must fall back to
//    initialize and an Mcp-Session-Id, then list and call.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { scenario, log, check, httpEndpoint, waitFor, resultText } from './harness.mjs';

const MODERN_VERSION = '2026-07-28';

async function connect(ctx, at, server, label) {
  const transport = new StreamableHTTPClientTransport(new URL(at.url(server)), {
    requestInit: { headers: { Authorization: `Bearer ${at.token}` } },
  });
  const client = new Client({ name: label, version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  ctx.addClient(label, client, transport);
  return { client, transport };
}

await scenario('SDK 2.x client over MCP Streamable HTTP, both eras', {
  servers: [
    { name: 'modern', demo: ['--era=modern'] },
    { name: 'legacy', demo: ['--era=legacy'] },
  ],
  daemonToml: 'http_listen = ["127.0.0.1:0"]',
  timeoutSeconds: 60,
}, async (ctx) => {
  const at = httpEndpoint(ctx);

  const modern = await connect(ctx, at, 'modern', 'sdk2-http-modern');
  let listChanged = 0;
  modern.client.setNotificationHandler('notifications/tools/list_changed', () => (listChanged += 1));
  await modern.client.connect(modern.transport);
  check(modern.client.getProtocolEra() === 'modern', `sdk2-http-modern: era ${modern.client.getProtocolEra()}, not modern`);
  check(modern.client.getNegotiatedProtocolVersion() === MODERN_VERSION,
        `sdk2-http-modern: negotiated ${modern.client.getNegotiatedProtocolVersion()}, not ${MODERN_VERSION}`);
  const modernTools = (await modern.client.listTools()).tools.map((t) => t.name);
  check(modernTools.includes('touch_tools') && modernTools.includes('echo'), `sdk2-http-modern: tools ${modernTools.join(', ')}`);
  const echo = await modern.client.callTool({ name: 'echo', arguments: { text: 'stateless over http' } });
  check(resultText(echo) === 'stateless over http', `sdk2-http-modern: echo answered ${JSON.stringify(echo)}`);
  const sum = await modern.client.callTool({ name: 'add', arguments: { a: 40, b: 2 } });
  check(resultText(sum) === '42', `sdk2-http-modern: add answered ${JSON.stringify(sum)}`);
  const subscription = await modern.client.listen({ toolsListChanged: true });
  await modern.client.callTool({ name: 'touch_tools', arguments: {} });
  await waitFor(() => listChanged > 0, 5000, 'sdk2-http-modern: notifications/tools/list_changed on its listen stream');
  await subscription.close?.();
  log(`sdk2-http-modern: era modern over HTTP, ${modernTools.length} tools, echo, add, a listen stream told of a list change`);

  const legacy = await connect(ctx, at, 'legacy', 'sdk2-http-legacy');
  await legacy.client.connect(legacy.transport);
  check(legacy.client.getProtocolEra() === 'legacy', `sdk2-http-legacy: era ${legacy.client.getProtocolEra()}, not legacy`);
  check(legacy.transport.sessionId, 'sdk2-http-legacy: no Mcp-Session-Id after the fallback to initialize');
  const legacyTools = (await legacy.client.listTools()).tools.map((t) => t.name);
  check(legacyTools.includes('echo') && !legacyTools.includes('touch_tools'), `sdk2-http-legacy: tools ${legacyTools.join(', ')}`);
  const legacyEcho = await legacy.client.callTool({ name: 'echo', arguments: { text: 'handshake over http' } });
  check(resultText(legacyEcho) === 'handshake over http', `sdk2-http-legacy: echo answered ${JSON.stringify(legacyEcho)}`);
  log(`sdk2-http-legacy: fell back to ${legacy.client.getNegotiatedProtocolVersion()} with a session, ${legacyTools.length} tools, echo`);
});
