// A stdio-to-HTTP bridge for the benchmarks: what an agent that only launches stdio servers
// needs in order to reach an MCP server behind an HTTP proxy. JSON-RPC messages from stdin go
// to the proxy and messages from the proxy go to stdout, unchanged, through the SDK's own
// transports (Streamable HTTP or the older HTTP+SSE).
//
//   node http-bridge.mjs --http URL | --sse URL
//
// It exits when stdin closes or the proxy ends the connection.

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const [flag, url] = process.argv.slice(2);
if (!['--http', '--sse'].includes(flag) || !url) {
  process.stderr.write('usage: node http-bridge.mjs --http URL | --sse URL\n');
  process.exit(2);
}

const remote = flag === '--sse' ? new SSEClientTransport(new URL(url)) : new StreamableHTTPClientTransport(new URL(url));
const local = new StdioServerTransport();
let ending = false;

function end(code, why) {
  if (ending) return;
  ending = true;
  if (why) process.stderr.write(`http-bridge: ${why}\n`);
  Promise.race([remote.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1000))]).then(() =>
    process.exit(code),
  );
}

local.onmessage = (message) => {
  remote.send(message).catch((error) => end(1, `sending to ${url} failed: ${error?.message ?? error}`));
};
remote.onmessage = (message) => {
  // Later requests carry the negotiated version, as the SDK client's own transport does.
  const version = message?.result?.protocolVersion;
  if (typeof version === 'string' && typeof remote.setProtocolVersion === 'function') remote.setProtocolVersion(version);
  local.send(message).catch(() => end(1));
};
remote.onerror = (error) => process.stderr.write(`http-bridge: ${error?.message ?? error}\n`);
remote.onclose = () => end(0);
local.onclose = () => end(0);
process.stdin.on('end', () => end(0));

await remote.start();
await local.start();
