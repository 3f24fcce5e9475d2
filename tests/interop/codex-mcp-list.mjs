// A real agent CLI, Codex, with its servers in ~/.codex/config.toml as a user writes them (a
// comment, other settings, a server with its env table, a remote one, one switched off).
// `mcpctl adopt codex` moves the stdio server onto mcpd; `codex mcp list` (CODEX_HOME and HOME
// in a temporary directory) must then show it as an `mcpctl connect NAME` entry with no env,
// and the other two as they were. The entry's command, exactly as Codex reports it, is then run
// as Codex would run it and must reach the server through mcpd.
//
// Run as root through user-runtime-ns.sh: no network but loopback, whatever the CLI tries;
// `mcp list` needs no login and starts no server.

import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { scenario, log, check, packageBin } from './harness.mjs';

await scenario('codex mcp list after mcpctl adopt codex', { servers: ['everything'], userRuntimeDir: true, timeoutSeconds: 100 }, async (ctx) => {
  const codex = packageBin('@openai/codex', 'codex');
  log(`Codex CLI ${codex.version} (${codex.script})`);
  const memory = packageBin('@modelcontextprotocol/server-memory');
  const home = path.join(ctx.tmp, 'home');
  const codexHome = path.join(home, '.codex');
  fs.mkdirSync(codexHome, { recursive: true });
  const config = path.join(codexHome, 'config.toml');
  const toml = (s) => JSON.stringify(s);
  const original = [
    '# Codex settings, kept as the user wrote them',
    'model = "gpt-5-codex"',
    'approval_policy = "on-request"',
    '',
    '[mcp_servers.memory]',
    `command = ${toml(process.execPath)}`,
    `args = [${toml(memory.script)}]`,
    'startup_timeout_sec = 30 # a slow first start',
    '',
    '[mcp_servers.memory.env]',
    `MEMORY_FILE_PATH = ${toml(path.join(ctx.tmp, 'memory.jsonl'))}`,
    '',
    '[mcp_servers.docs]',
    'url = "https://mcp.example.invalid/mcp"',
    '',
    '[mcp_servers.paused]',
    'command = "npx"',
    'args = ["-y", "@modelcontextprotocol/server-everything"]',
    'enabled = false',
    '',
  ].join('\n');
  fs.writeFileSync(config, original);

  const env = { ...process.env, HOME: home, CODEX_HOME: codexHome, NO_COLOR: '1' };
  delete env.XDG_STATE_HOME;
  const registry = path.join(ctx.tmp, 'registry.toml');
  const adopted = await ctx.run('mcpctl adopt codex', 'mcpctl', ['adopt', 'codex', '--registry', registry], { env, cwd: ctx.tmp });
  check(adopted.status === 0, `mcpctl adopt codex exited with ${adopted.status}: ${adopted.stderr}${adopted.stdout}`);
  check(adopted.stdout.includes("memory: runs 'mcpctl connect memory'"), `adopt did not move memory:\n${adopted.stdout}`);
  const rewritten = fs.readFileSync(config, 'utf8');
  check(rewritten.includes('startup_timeout_sec = 30 # a slow first start') && rewritten.startsWith('# Codex settings'), `adopt changed more than the entry:\n${rewritten}`);
  check(fs.readFileSync(`${config}.mcpd-backup`, 'utf8') === original, 'the backup is not the original file');
  log('mcpctl adopt codex rewrote [mcp_servers.memory] in place');

  const listed = await ctx.run('codex mcp list --json', process.execPath, [codex.script, 'mcp', 'list', '--json'], { env, cwd: ctx.tmp, timeoutMs: 60000 });
  check(listed.status === 0, `codex mcp list --json exited with ${listed.status ?? listed.signal}: ${listed.stderr}`);
  let servers = null;
  try {
    servers = JSON.parse(listed.stdout);
  } catch {
    check(false, `codex mcp list --json printed no JSON:\n${listed.stdout}`);
  }
  const byName = Object.fromEntries(servers.map((s) => [s.name, s]));
  const entry = byName.memory;
  check(entry?.enabled === true && entry.transport?.type === 'stdio', `codex lists no enabled stdio memory server: ${JSON.stringify(entry)}`);
  check(entry.transport.command === 'mcpctl' && JSON.stringify(entry.transport.args) === '["connect","memory"]', `codex runs memory as ${entry.transport.command} ${JSON.stringify(entry.transport.args)}, not mcpctl connect memory`);
  check(!entry.transport.env || Object.keys(entry.transport.env).length === 0, `codex still has memory's env: ${JSON.stringify(entry.transport.env)}`);
  check(entry.startup_timeout_sec === 30, `codex lost memory's startup_timeout_sec: ${entry.startup_timeout_sec}`);
  check(byName.docs?.transport?.url === 'https://mcp.example.invalid/mcp', `codex lost the remote docs entry: ${JSON.stringify(byName.docs)}`);
  check(byName.paused?.enabled === false && byName.paused.transport?.command === 'npx', `codex lost the switched-off entry: ${JSON.stringify(byName.paused)}`);
  const table = await ctx.run('codex mcp list', process.execPath, [codex.script, 'mcp', 'list'], { env, cwd: ctx.tmp, timeoutMs: 60000 });
  const line = table.stdout.split('\n').find((l) => /^memory\s/.test(l));
  check(line && /\smcpctl\s+connect memory\s/.test(line), `codex mcp list shows memory as '${line?.trim()}'`);
  log(`codex mcp list: '${line.trim()}'`);

  // What Codex would start for the entry, started: it reaches server-memory under this mcpd.
  const transport = new StdioClientTransport({ command: entry.transport.command, args: entry.transport.args, stderr: 'pipe' });
  const client = new Client({ name: 'codex-entry', version: '1.0.0' });
  ctx.addClient('codex-entry', client, transport);
  await client.connect(transport, { timeout: 20000 });
  const tools = (await client.listTools()).tools.map((t) => t.name);
  check(tools.includes('read_graph'), `the adopted entry reached a server without read_graph: ${tools.join(', ')}`);
  await ctx.waitRunning('memory', 5000);
  log(`the adopted entry reached server-memory through mcpd (${tools.length} tools)`);

  const undone = await ctx.run('mcpctl adopt codex --undo', 'mcpctl', ['adopt', 'codex', '--undo', '--registry', registry], { env, cwd: ctx.tmp });
  check(undone.status === 0 && fs.readFileSync(config, 'utf8') === original, `adopt --undo did not give back the original: ${undone.stderr}`);
  log('mcpctl adopt codex --undo gave back the original bytes');
});
