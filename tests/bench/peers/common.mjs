// Shared pieces of the npm-based benchmarks: the set-ups that put a stdio server
// (server-everything unless told otherwise) behind nothing, mcpd, mcp-proxy or supergateway;
// SDK clients reaching them; /proc memory readings; small statistics. Every process started here is stopped by pid; listeners bind 127.0.0.1
// (or, for supergateway, which binds every address, run inside the network namespace that
// tests/bench/run.sh creates with only loopback up).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
const STARTED = Date.now();

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function note(message) {
  const t = ((Date.now() - STARTED) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`bench-peers [${t}s] ${message}\n`);
}

// --- statistics ---

export function percentile(values, p) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(values) {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// --- /proc ---

function readIfExists(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

// Every descendant pid of `pid`.
export function descendants(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readIfExists(`/proc/${entry}/stat`);
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(entry));
  }
  const result = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()) ?? []) {
      result.push(child);
      queue.push(child);
    }
  }
  return result;
}

function rollupKib(text, key) {
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

// RSS, PSS and private memory (KiB) and the number of processes of `pids` and their descendants.
export function memoryOf(pids) {
  const all = new Set();
  for (const pid of pids) {
    if (!pid) continue;
    all.add(pid);
    for (const d of descendants(pid)) all.add(d);
  }
  const total = { processes: 0, rss_kib: 0, pss_kib: 0, private_kib: 0, names: {} };
  for (const pid of all) {
    const rollup = readIfExists(`/proc/${pid}/smaps_rollup`);
    if (!rollup) continue;
    total.processes += 1;
    total.rss_kib += rollupKib(rollup, 'Rss');
    total.pss_kib += rollupKib(rollup, 'Pss');
    total.private_kib += rollupKib(rollup, 'Private_Clean') + rollupKib(rollup, 'Private_Dirty');
    const name = readIfExists(`/proc/${pid}/comm`).trim();
    total.names[name] = (total.names[name] ?? 0) + 1;
  }
  return total;
}

// CPU time (ns) of `pids` and their descendants, from /proc/PID/schedstat.
export function cpuOf(pids) {
  let total = 0;
  for (const pid of pids) {
    if (!pid) continue;
    for (const p of [pid, ...descendants(pid)]) total += Number(readIfExists(`/proc/${p}/schedstat`).split(' ')[0] || 0);
  }
  return total;
}

// --- the installed packages ---

export function packageBin(pkg, binName) {
  const dir = path.join(HERE, 'node_modules', ...pkg.split('/'));
  const manifestPath = path.join(dir, 'package.json');
  if (!fs.existsSync(manifestPath)) throw new Error(`${pkg} is not installed: run 'npm ci' in ${HERE}`);
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[binName] ?? Object.values(manifest.bin ?? {})[0];
  return { script: path.join(dir, bin), version: manifest.version };
}

export const everything = () => packageBin('@modelcontextprotocol/server-everything');

// The stdio server a set-up puts behind it: its registry name, command line, and more registry
// lines for mcpd. server-everything by default.
export function everythingServer() {
  const { script } = everything();
  return { name: 'everything', command: process.execPath, args: [script, 'stdio'], settings: [] };
}

export function versions() {
  const v = (pkg) => {
    try {
      return packageBin(pkg).version;
    } catch {
      return null;
    }
  };
  return {
    node: process.version,
    sdk: JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8')).version,
    'server-everything': v('@modelcontextprotocol/server-everything'),
    'mcp-proxy': v('mcp-proxy'),
    supergateway: v('supergateway'),
  };
}

// --- processes ---

// A long-running process with its output in `logFile`, stopped by pid (SIGTERM, then SIGKILL).
export class Daemon {
  constructor(command, args, logFile, env = process.env) {
    const out = fs.openSync(logFile, 'a');
    this.logFile = logFile;
    this.child = spawn(command, args, { stdio: ['ignore', out, out], env });
    fs.closeSync(out);
    this.exited = null;
    this.exit = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => resolve((this.exited = { code, signal })));
      this.child.on('error', (error) => resolve((this.exited = { error: String(error) })));
    });
  }

  get pid() {
    return this.child.pid;
  }

  log() {
    return readIfExists(this.logFile).split('\n').slice(-30).join('\n');
  }

  async stop() {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    if ((await Promise.race([this.exit, sleep(5000).then(() => 'timeout')])) === 'timeout') {
      this.child.kill('SIGKILL');
      await Promise.race([this.exit, sleep(2000)]);
    }
  }
}

// A TCP port on 127.0.0.1 that is free now: bound by the kernel's choice, then let go.
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, daemon, what) {
  const deadline = Date.now() + 30000;
  for (;;) {
    if (daemon.exited) throw new Error(`${what} exited before listening: ${JSON.stringify(daemon.exited)}\n${daemon.log()}`);
    const ok = await new Promise((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on 127.0.0.1:${port} within 30 s\n${daemon.log()}`);
    await sleep(100);
  }
}

// --- set-ups: how a client reaches one server ---

// Each set-up: start(), connect(name, options) -> { client, pids }, serverPids(), stop().
// `via` picks the client's transport where there is a choice: 'stdio' (the agent launches a
// command: mcpctl connect, or the stdio-to-HTTP bridge) or 'http' (an SDK client that speaks
// HTTP itself). `server` (see everythingServer) is the stdio server behind it.

async function connectClient(transport, name, capabilities, setup) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  const record = { client, transport, errors: [] };
  client.onerror = (error) => record.errors.push(String(error?.message ?? error));
  if (setup) setup(client);
  await client.connect(transport, { timeout: 30000 });
  return record;
}

export class Direct {
  constructor({ server } = {}) {
    this.label = 'direct';
    this.server = server;
    this.clients = [];
  }

  async start() {}

  async connect(name, { capabilities = {}, setup } = {}) {
    const { command, args } = this.server ?? everythingServer();
    const transport = new StdioClientTransport({
      command,
      args,
      env: getDefaultEnvironment(),
      stderr: 'ignore',
    });
    const record = await connectClient(transport, name, capabilities, setup);
    record.pids = () => [transport.pid];
    this.clients.push(record);
    return record;
  }

  serverPids() {
    return [];
  }

  async stop() {
    await closeAll(this.clients);
  }
}

// mcpd with the server as its one entry, reached through `mcpctl connect` (via 'stdio') or over
// MCP Streamable HTTP on a loopback port of its choice with the user's bearer token (via 'http').
// Its state (token, signing key, caches) stays in its own directory.
export class Mcpd {
  constructor(binDir, tmp, { server, via = 'stdio' } = {}) {
    this.label = via === 'http' ? 'mcpd (HTTP client)' : 'mcpd';
    this.binDir = binDir;
    this.tmp = tmp;
    this.server = server;
    this.via = via;
    this.name = `mcpd-${via}`;
    this.socket = path.join(tmp, `${this.name}.sock`);
    this.clients = [];
  }

  mcpctl(args) {
    return spawnSync(path.join(this.binDir, 'mcpctl'), ['--socket', this.socket, ...args], { encoding: 'utf8', timeout: 5000 });
  }

  async start() {
    this.server ??= everythingServer();
    const { name, command, args, settings = [] } = this.server;
    const registry = path.join(this.tmp, `${this.name}.toml`);
    fs.writeFileSync(
      registry,
      [
        '[daemon]',
        'log_level = "warning"',
        ...(this.via === 'http' ? ['http_listen = ["127.0.0.1:0"]'] : []),
        `[servers.${name}]`,
        `command = ${JSON.stringify(command)}`,
        `args = [${args.map((a) => JSON.stringify(a)).join(', ')}]`,
        'restart = "never"',
        'stop_grace = "500ms"',
        'health_interval = "0s"',
        ...settings,
        '',
      ].join('\n'),
    );
    const env = { ...process.env, STATE_DIRECTORY: path.join(this.tmp, `${this.name}-state`) };
    this.daemon = new Daemon(path.join(this.binDir, 'mcpd'), ['--config', registry, '--socket', this.socket], path.join(this.tmp, `${this.name}.log`), env);
    const deadline = Date.now() + 30000;
    for (;;) {
      const status = this.mcpctl(['--json', 'status', name]);
      if (status.status === 0 && JSON.parse(status.stdout).servers?.[0]?.state === 'running') break;
      if (this.daemon.exited || Date.now() > deadline) throw new Error(`mcpd did not run ${name}\n${this.daemon.log()}`);
      await sleep(100);
    }
    if (this.via === 'http') {
      const run = this.mcpctl(['--json', 'http-token']);
      const info = run.status === 0 ? JSON.parse(run.stdout) : {};
      const address = (info.addresses ?? []).find((a) => /^127\.0\.0\.1:[1-9]\d*$/.test(a));
      if (!info.token || !address) throw new Error(`mcpctl http-token gave no token and loopback address (${run.status}): ${run.stdout}${run.stderr}`);
      this.token = info.token;
      this.url = `http://${address}/mcp/${name}`;
    }
  }

  async connect(name, { capabilities = {}, setup } = {}) {
    const transport =
      this.via === 'http'
        ? new StreamableHTTPClientTransport(new URL(this.url), { requestInit: { headers: { Authorization: `Bearer ${this.token}` } } })
        : new StdioClientTransport({
            command: path.join(this.binDir, 'mcpctl'),
            args: ['--socket', this.socket, 'connect', this.server.name],
            stderr: 'ignore',
          });
    const record = await connectClient(transport, name, capabilities, setup);
    record.pids = () => (this.via === 'http' ? [] : [transport.pid]);
    this.clients.push(record);
    return record;
  }

  serverPids() {
    return [this.daemon.pid];
  }

  async stop() {
    await closeAll(this.clients);
    await this.daemon?.stop();
  }
}

// An HTTP proxy in front of its own child(ren) running the server.
class HttpProxy {
  constructor(tmp, port, via, server) {
    this.tmp = tmp;
    this.port = port;
    this.via = via;
    this.server = server;
    this.clients = [];
  }

  serverCommand() {
    this.server ??= everythingServer();
    return [this.server.command, ...this.server.args];
  }

  async connect(name, { capabilities = {}, setup } = {}) {
    let transport;
    if (this.via === 'stdio') {
      transport = new StdioClientTransport({
        command: process.execPath,
        args: [path.join(HERE, 'http-bridge.mjs'), this.bridgeFlag, this.url],
        env: getDefaultEnvironment(),
        stderr: 'ignore',
      });
    } else {
      transport = this.httpTransport();
    }
    const record = await connectClient(transport, name, capabilities, setup);
    record.pids = () => (this.via === 'stdio' ? [transport.pid] : []);
    this.clients.push(record);
    return record;
  }

  serverPids() {
    return [this.daemon.pid];
  }

  async stop() {
    await closeAll(this.clients);
    await this.daemon?.stop();
  }
}

export class McpProxy extends HttpProxy {
  constructor(tmp, port, via, { server } = {}) {
    super(tmp, port, via, server);
    this.label = `mcp-proxy (${via === 'stdio' ? 'stdio bridge' : 'HTTP client'})`;
    this.url = `http://127.0.0.1:${port}/mcp`;
    this.bridgeFlag = '--http';
  }

  async start() {
    const proxy = packageBin('mcp-proxy', 'mcp-proxy').script;
    this.daemon = new Daemon(
      process.execPath,
      [proxy, '--host', '127.0.0.1', '--port', String(this.port), '--server', 'stream', '--', ...this.serverCommand()],
      path.join(this.tmp, `mcp-proxy-${this.port}.log`),
    );
    await waitForPort(this.port, this.daemon, 'mcp-proxy');
  }

  httpTransport() {
    return new StreamableHTTPClientTransport(new URL(this.url));
  }
}

// supergateway in its stateful Streamable HTTP mode (one server process per session): its
// default SSE mode serves one client only (a second SSE connection ends the gateway), which
// `sse: true` keeps for the check that shows it.
export class Supergateway extends HttpProxy {
  constructor(tmp, port, via, { sse = false, server } = {}) {
    super(tmp, port, via, server);
    this.sse = sse;
    this.label = `supergateway${sse ? ' SSE' : ''} (${via === 'stdio' ? 'stdio bridge' : 'HTTP client'})`;
    this.url = `http://127.0.0.1:${port}/${sse ? 'sse' : 'mcp'}`;
    this.bridgeFlag = sse ? '--sse' : '--http';
  }

  async start() {
    const gateway = packageBin('supergateway', 'supergateway').script;
    const mode = this.sse ? [] : ['--outputTransport', 'streamableHttp', '--stateful'];
    // It listens on every address: only ever run inside the benchmark's own network namespace.
    this.daemon = new Daemon(
      process.execPath,
      [
        gateway,
        '--stdio',
        // A command line for its shell.
        this.serverCommand().map((a) => JSON.stringify(a)).join(' '),
        '--port',
        String(this.port),
        '--logLevel',
        'none',
        ...mode,
      ],
      path.join(this.tmp, `supergateway-${this.port}.log`),
    );
    await waitForPort(this.port, this.daemon, 'supergateway');
  }

  httpTransport() {
    return this.sse ? new SSEClientTransport(new URL(this.url)) : new StreamableHTTPClientTransport(new URL(this.url));
  }

  // Whether the gateway process is still there.
  alive() {
    return !this.daemon.exited;
  }
}

async function closeAll(records) {
  await Promise.all(records.map(({ client }) => Promise.race([client.close().catch(() => {}), sleep(3000)])));
  records.length = 0;
}

export function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-bench-peers-'));
}

export function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

export function parseArgs(argv) {
  const options = { binDir: null, out: null, profile: 'full', isolated: false, pinned: false, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bin-dir') options.binDir = argv[++i];
    else if (a === '--out') options.out = argv[++i];
    else if (a === '--quick') options.profile = 'quick';
    else if (a === '--smoke') options.profile = 'smoke';
    else if (a === '--isolated') options.isolated = true;
    else if (a === '--pinned') options.pinned = true;
    else if (a === '--only') options.only = new Set(argv[++i].split(','));
    else throw new Error(`unknown argument ${a}`);
  }
  if (!options.binDir) throw new Error('usage: node peers.mjs --bin-dir DIR [--out FILE] [--quick|--smoke] [--isolated] [--pinned] [--only agents,peers_latency,peers_load]');
  options.binDir = path.resolve(options.binDir);
  return options;
}

// The main of a figures script: run each figure `options.only` lets through, record its result
// or its error, give up after `minutes`, and write the JSON to --out (or stdout). Exits 1 when a
// figure failed.
export async function runFigures(options, profile, figures, minutes) {
  const output = { profile: options.profile, date: new Date().toISOString(), versions: versions(), figures: {} };
  let failures = 0;
  const deadline = setTimeout(() => {
    note(`did not finish within ${minutes} minutes; giving up`);
    process.exit(1);
  }, minutes * 60 * 1000);
  for (const [name, run] of figures) {
    if (options.only && !options.only.has(name)) continue;
    note(`--- ${name}`);
    try {
      output.figures[name] = await run(options, profile);
    } catch (error) {
      failures++;
      output.figures[name] = { error: String(error?.stack ?? error) };
      note(`${name} FAILED: ${error?.stack ?? error}`);
    }
  }
  clearTimeout(deadline);
  const text = `${JSON.stringify(output, null, 2)}\n`;
  if (options.out) fs.writeFileSync(options.out, text);
  else process.stdout.write(text);
  process.exit(failures === 0 ? 0 : 1);
}
