// The MCP Inspector's CLI mode, an independently written client, configured with
// {"command": "mcpctl", "args": ["connect", "everything"]} in its --config file, reaches a pooled
// server-everything through a per-user mcpd on /run/user/UID/mcpd/mcpd.sock, with neither
// XDG_RUNTIME_DIR nor MCPD_SOCKET in its environment. Every answer must be the JSON the same
// inspector command prints when it spawns server-everything itself. Run as root through
// user-runtime-ns.sh.
//
// Inspector 0.15.0 is the newest whose `engines` accepts node 20 (0.16 on want node >= 22.7.5).
// Its CLI (cli/build/transport.js) starts a stdio server with its own whole environment overlaid
// by the SDK's getDefaultEnvironment(), not with the SDK's default environment alone: mcpctl sees
// what the inspector was started with, which here, as for an agent started from a desktop
// session, holds no XDG_RUNTIME_DIR and no MCPD_SOCKET.

import fs from 'node:fs';
import path from 'node:path';
import { scenario, log, check, fail, packageBin, waitFor } from './harness.mjs';

// mcpd initializes a pooled server once, declaring roots, sampling and elicitation (with
// 2025-11-25's URL mode) on behalf of its sessions (docs/MULTIPLEXING.md); server-everything
// lists these tools only to a client that declares them, which the inspector does not. They
// are the only difference allowed.
const CAPABILITY_TOOLS = ['get-roots-list', 'trigger-sampling-request', 'trigger-elicitation-request',
                          'trigger-url-elicitation'];

function parseOutput(label, run) {
  check(run.status === 0, `${label}: the inspector exited with ${run.status ?? run.signal}: ${(run.stderr || run.stdout).trim().slice(-500)}`);
  try {
    return JSON.parse(run.stdout);
  } catch {
    fail(`${label}: the inspector printed no JSON: ${run.stdout.slice(0, 500)}`);
  }
}

// The first place two JSON values differ, for the FAIL message.
function firstDifference(a, b, where = '$') {
  if (JSON.stringify(a) === JSON.stringify(b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const found = firstDifference(a[key], b[key], `${where}.${key}`);
      if (found) return found;
    }
  }
  return `${where}: ${JSON.stringify(a)?.slice(0, 200)} vs ${JSON.stringify(b)?.slice(0, 200)}`;
}

await scenario('MCP Inspector CLI through the per-user mcpd in /run/user/UID', { servers: ['everything'], userRuntimeDir: true, timeoutSeconds: 120 }, async (ctx) => {
  ctx.checkDefaultSocket();

  const inspector = packageBin('@modelcontextprotocol/inspector', 'mcp-inspector');
  log(`MCP Inspector ${inspector.version} (${inspector.script})`);
  const everything = ctx.definitions.everything;
  const configs = {
    pooled: { mcpServers: { everything: { command: 'mcpctl', args: ['connect', 'everything'] } } },
    direct: { mcpServers: { everything: { command: everything.command, args: everything.args } } },
  };
  const files = {};
  for (const [kind, config] of Object.entries(configs)) {
    files[kind] = path.join(ctx.tmp, `inspector-${kind}.json`);
    fs.writeFileSync(files[kind], JSON.stringify(config, null, 2));
  }

  // `mcp-inspector --cli --config FILE --server everything ARGS...`, as a user types it.
  const inspect = (kind, label, args) =>
    ctx.run(`inspector ${label} (${kind})`, process.execPath, [inspector.script, '--cli', '--config', files[kind], '--server', 'everything', ...args], { timeoutMs: 30000 });

  // One inspector command through mcpd and straight to server-everything, side by side; returns
  // both parsed outputs. The pooled run must have attached a session to this mcpd.
  const both = async (label, args) => {
    const before = ctx.attachedSessions();
    const [pooled, direct] = await Promise.all([inspect('pooled', label, args), inspect('direct', label, args)]);
    const result = { pooled: parseOutput(`${label} through mcpctl connect`, pooled), direct: parseOutput(`${label} direct`, direct) };
    await waitFor(() => ctx.attachedSessions() > before, 2000, `a session on this mcpd from the inspector's ${label}`);
    return result;
  };
  const same = (label, { pooled, direct }) => {
    const difference = firstDifference(pooled, direct);
    check(!difference, `${label}: through mcpctl connect the inspector printed other JSON than straight to server-everything, at ${difference}`);
    log(`${label}: the same JSON through mcpd as direct (${JSON.stringify(pooled).length} bytes)`);
  };

  const tools = await both('tools/list', ['--method', 'tools/list']);
  const pooledNames = tools.pooled.tools?.map((t) => t.name) ?? [];
  const extra = pooledNames.filter((name) => !tools.direct.tools?.some((t) => t.name === name));
  check(extra.every((name) => CAPABILITY_TOOLS.includes(name)), `tools/list through mcpd has tools the direct one lacks beyond ${CAPABILITY_TOOLS.join(', ')}: ${extra.join(', ')}`);
  same('tools/list (less the tools for capabilities mcpd declares)', {
    pooled: { ...tools.pooled, tools: tools.pooled.tools.filter((t) => !CAPABILITY_TOOLS.includes(t.name)) },
    direct: tools.direct,
  });
  check(pooledNames.includes('echo'), `tools/list lacks echo: ${pooledNames.join(', ')}`);

  const echo = await both('tools/call echo', ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'message=hi']);
  check(echo.pooled.content?.[0]?.text === 'Echo: hi', `tools/call echo answered ${JSON.stringify(echo.pooled)}`);
  same('tools/call echo message=hi', echo);

  const resources = await both('resources/list', ['--method', 'resources/list']);
  same('resources/list', resources);
  // A static document: a dynamic resource's text carries the time it was made.
  const uri = resources.pooled.resources?.find((r) => r.uri.includes('/static/'))?.uri;
  check(uri, `resources/list names no static resource: ${JSON.stringify(resources.pooled).slice(0, 300)}`);
  const read = await both('resources/read', ['--method', 'resources/read', '--uri', uri]);
  check(read.pooled.contents?.[0]?.uri === uri && read.pooled.contents[0].text, `resources/read ${uri} answered ${JSON.stringify(read.pooled).slice(0, 300)}`);
  same(`resources/read ${uri}`, read);

  const prompt = await both('prompts/get', ['--method', 'prompts/get', '--prompt-name', 'args-prompt', '--prompt-args', 'city=Paris', 'state=Texas']);
  check(JSON.stringify(prompt.pooled.messages ?? []).includes('Paris'), `prompts/get args-prompt city=Paris answered ${JSON.stringify(prompt.pooled)}`);
  same('prompts/get args-prompt city=Paris state=Texas', prompt);

  check(ctx.serverPids('everything').length === 1, `expected one server-everything below mcpd, found ${ctx.serverPids('everything').length}`);
  log(`every inspector session went to this mcpd's one server-everything (${ctx.attachedSessions()} sessions attached)`);
});
