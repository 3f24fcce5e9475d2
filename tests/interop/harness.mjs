// Runner for the interop scenarios: a private mcpd on a temporary registry and socket, real MCP
// clients (the official TypeScript SDK) reaching its pooled servers through `mcpctl connect`.
//
//   node SCENARIO.mjs [--bin-dir DIR] [--direct]
//
// --bin-dir (or $MCPD_BIN_DIR): where mcpd and mcpctl are; default ../../build/bin from here.
// --direct: no mcpd; every client spawns its own copy of the server. Only for telling whether a
// failure is mcpd's or the scenario's: ctest never passes it.
//
// A scenario declared with `userRuntimeDir: true` runs mcpd as `systemctl --user` does (with
// XDG_RUNTIME_DIR=/run/user/UID, no --socket), and its clients as an agent configured with
// `mcpctl connect NAME` would: no XDG_RUNTIME_DIR, no MCPD_SOCKET, mcpctl found on PATH. It
// must run as root through user-runtime-ns.sh, which gives it a /run of its own and no network.
//
// A scenario exits 0 when it passes, 1 with "FAIL: ..." (plus mcpd's and the clients' stderr)
// when it fails or runs out of time (and always with INTEROP_VERBOSE=1). mcpd is always stopped and the temporary directory removed.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

import { ScenarioError, log, fail, check, sleep, waitFor } from './checks.mjs';
import { LineSession } from './line-session.mjs';
import { becomeAgentEnvironment, checkUserRuntimeNamespace, descendants, killGroup, readIfExists, tail } from './processes.mjs';
import { registryToml, serverDefinition } from './registry.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export { ScenarioError, allToolNames, check, fail, log, resultText, sleep, waitFor } from './checks.mjs';
export { packageBin } from './registry.mjs';

function parseArgs(argv) {
  const options = { binDir: process.env.MCPD_BIN_DIR, direct: process.env.INTEROP_DIRECT === '1' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--bin-dir' && i + 1 < argv.length) options.binDir = argv[++i];
    else if (argv[i] === '--direct') options.direct = true;
    else {
      process.stderr.write(`usage: node ${path.basename(process.argv[1])} [--bin-dir DIR] [--direct]\n`);
      process.exit(2);
    }
  }
  options.binDir = path.resolve(options.binDir ?? path.join(HERE, '..', '..', 'build', 'bin'));
  return options;
}

// The token and the one TCP address `mcpctl --json http-token` reports.
export function httpEndpoint(ctx) {
  const info = ctx.mcpctlJson(['http-token']);
  check(typeof info.token === 'string' && info.token.length >= 16, `mcpctl http-token printed no token: ${JSON.stringify(info)}`);
  const tcp = (info.addresses ?? []).filter((a) => /^127\.0\.0\.1:\d+$/.test(a));
  check(tcp.length === 1 && tcp[0] !== '127.0.0.1:0', `mcpctl http-token lists no single loopback TCP address: ${JSON.stringify(info.addresses)}`);
  return { token: info.token, address: tcp[0], url: (name) => `http://${tcp[0]}/mcp/${name}` };
}

class Context {
  constructor(name, options, servers, userRuntimeDir) {
    this.name = name;
    this.options = options;
    this.direct = options.direct;
    this.mcpd = path.join(options.binDir, 'mcpd');
    this.mcpctl = path.join(options.binDir, 'mcpctl');
    this.runtimeDir = null;
    if (userRuntimeDir) {
      check(!options.direct, '--direct does not apply: this scenario is about reaching mcpd');
      this.runtimeDir = checkUserRuntimeNamespace();
      becomeAgentEnvironment(options.binDir);
    }
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-interop-'));
    // Where mcpd listens by default under `systemctl --user`, and where mcpctl must find it.
    this.socket = this.runtimeDir ? path.join(this.runtimeDir, 'mcpd', 'mcpd.sock') : path.join(this.tmp, 'mcpd.sock');
    this.stateDir = path.join(this.tmp, 'state');
    this.runs = [];
    this.running = new Set();
    this.definitions = {};
    try {
      for (const server of servers) {
        const name = server.name ?? server;
        const def = serverDefinition(server, this.tmp, options.binDir);
        // A scenario's own registry keys for a server (filters, say), after the definition's.
        def.settings = { ...def.settings, ...options.serverSettings?.[name] };
        this.definitions[name] = def;
      }
    } catch (error) {
      this.removeTmp();
      throw error;
    }
    this.clients = [];
    this.clientErrors = [];
    this.closing = false;
    this.daemon = null;
  }

  async startDaemon() {
    for (const bin of [this.mcpd, this.mcpctl]) {
      check(fs.existsSync(bin), `${bin} does not exist: build mcpd first or pass --bin-dir`);
    }
    const registry = path.join(this.tmp, 'registry.toml');
    fs.writeFileSync(registry, registryToml(this.definitions, this.options.extraToml, this.options.daemonToml));
    this.daemonLog = path.join(this.tmp, 'mcpd.log');
    // Appended to: a scenario that restarts mcpd keeps the log of each run. This run's
    // output starts at daemonLogStart.
    this.daemonLogStart = fs.existsSync(this.daemonLog) ? fs.statSync(this.daemonLog).size : 0;
    const out = fs.openSync(this.daemonLog, 'a');
    // In a userRuntimeDir scenario mcpd picks its socket itself, from XDG_RUNTIME_DIR, as under
    // `systemctl --user` (only mcpd's environment has it).
    const argv = this.runtimeDir
      ? [this.mcpd, '--config', registry]
      : [this.mcpd, '--config', registry, '--socket', this.socket];
    // Its state (the cache of lazy servers) in the temporary directory, as under systemd's
    // StateDirectory=: the same across a restartDaemon(), never the user's own.
    const env = { ...process.env, STATE_DIRECTORY: this.stateDir };
    if (this.runtimeDir) env.XDG_RUNTIME_DIR = this.runtimeDir;
    // setpriv --pdeathsig: mcpd gets SIGTERM should this process be killed without cleaning up.
    const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p));
    const [command, ...args] = setpriv ? [setpriv, '--pdeathsig', 'TERM', '--', ...argv] : argv;
    this.daemon = spawn(command, args, { stdio: ['ignore', out, out], env });
    fs.closeSync(out);
    this.daemonExit = new Promise((resolve) => {
      this.daemon.on('exit', (code, signal) => resolve({ code, signal }));
      this.daemon.on('error', (error) => resolve({ code: null, signal: null, error }));
    });
    let exited = null;
    this.daemonExit.then((status) => (exited = status));
    const names = Object.entries(this.definitions).map(([n, d]) => `${n} ${d.version}`).join(', ');
    log(`mcpd started (pid ${this.daemon.pid}) with ${names} on ${this.socket}`);

    const deadline = Date.now() + 15000;
    for (;;) {
      if (exited) fail(`mcpd exited before answering (${JSON.stringify(exited)})`);
      const probe = spawnSync(this.mcpctl, ['--socket', this.socket, 'version'], { encoding: 'utf8', timeout: 5000 });
      if (probe.status === 0) break;
      if (Date.now() > deadline) {
        fail(`mcpd did not answer 'mcpctl version' within 15 s: ${probe.stderr || probe.stdout}`);
      }
      await sleep(100);
    }
    log('mcpd answers');
  }

  async stopDaemon() {
    if (!this.daemon || this.daemon.exitCode !== null || this.daemon.signalCode !== null) return null;
    this.daemon.kill('SIGTERM');
    const timeout = sleep(10000).then(() => 'timeout');
    const result = await Promise.race([this.daemonExit, timeout]);
    if (result !== 'timeout') return null;
    this.daemon.kill('SIGKILL');
    await Promise.race([this.daemonExit, sleep(2000)]);
    return 'mcpd did not exit within 10 s of SIGTERM (killed)';
  }

  // Stops mcpd and starts a new one on the same registry, socket and state directory (the
  // cache of lazy servers persists); its output goes on in the same log.
  async restartDaemon() {
    const problem = await this.stopDaemon();
    if (problem) fail(problem);
    check(this.daemon.exitCode === 0, `mcpd exited with ${this.daemon.exitCode ?? this.daemon.signalCode} on SIGTERM`);
    log(`mcpd stopped (pid ${this.daemon.pid})`);
    await this.startDaemon();
  }

  // The pids of every process below mcpd: its servers' processes and theirs, and its keeper.
  daemonDescendants() {
    return this.daemon ? descendants(this.daemon.pid) : [];
  }

  // An SDK client connected to `server`: through `mcpctl connect SERVER`, or to its own copy of
  // the server with --direct. `setup(client)` runs before the MCP handshake (request handlers).
  // In a userRuntimeDir scenario it is configured as the README says, {"command": "mcpctl",
  // "args": ["connect", SERVER]}, and the SDK gives mcpctl its default environment.
  // `cwd`: the directory the agent runs mcpctl in (its project, for sharing = "project").
  // `server` may also be a group of the scenario's registry, or an array of server names
  // (`mcpctl connect a b`: one session over all of them); those need mcpd, not --direct.
  async connect(server, clientName, { capabilities = {}, setup, cwd } = {}) {
    const names = Array.isArray(server) ? server : [server];
    const def = names.length === 1 ? this.definitions[server] ?? (this.options.groups?.includes(server) ? { args: [] } : null) : { args: [] };
    check(def, `scenario did not declare server '${server}'`);
    check(!this.direct || def.command, `${names.join(' ')} is a group: --direct does not apply`);
    const directArgs = def.args.map((arg) => arg.replaceAll('{project}', cwd ?? process.cwd()));
    const params = this.direct
      ? { command: def.command, args: directArgs, env: { ...getDefaultEnvironment(), ...def.env }, stderr: 'pipe' }
      : this.runtimeDir
        ? { command: 'mcpctl', args: ['connect', ...names], stderr: 'pipe' }
        : { command: this.mcpctl, args: ['--socket', this.socket, 'connect', ...names], stderr: 'pipe' };
    if (cwd) params.cwd = cwd;
    const transport = new StdioClientTransport(params);
    const record = { name: clientName, stderr: '' };
    transport.stderr?.on('data', (chunk) => (record.stderr += chunk.toString()));
    // The SDK hands the version the server's InitializeResult named to a transport that wants it.
    transport.setProtocolVersion = (version) => (record.protocolVersion = version);
    const client = new Client({ name: clientName, version: '1.0.0' }, { capabilities });
    client.onerror = (error) => {
      if (!this.closing) this.clientErrors.push({ client: clientName, error: String(error?.message ?? error) });
    };
    if (setup) setup(client);
    record.client = client;
    this.clients.push(record);
    try {
      await client.connect(transport, { timeout: 20000 });
    } catch (error) {
      fail(`${clientName}: MCP initialize through ${this.direct ? 'the server' : 'mcpctl connect'} failed: ${error?.message ?? error}`);
    }
    return client;
  }

  // A client the scenario made itself (another SDK's): closed with the others at the end, the
  // stderr of `transport`'s process shown with theirs. The client's onerror is counted as theirs.
  addClient(name, client, transport) {
    const record = { name, stderr: '', client };
    transport.stderr?.on('data', (chunk) => (record.stderr += chunk.toString()));
    client.onerror = (error) => {
      if (!this.closing) this.clientErrors.push({ client: name, error: String(error?.message ?? error) });
    };
    this.clients.push(record);
  }

  // The protocolVersion of the InitializeResult a client of connect() received.
  protocolVersion(client) {
    return this.clients.find((record) => record.client === client)?.protocolVersion;
  }

  // A hand-written JSON-RPC session (line-session.mjs) on `server`, through `mcpctl connect SERVER`
  // or, with --direct, on its own copy of the server: for protocol revisions the SDK does not
  // speak. Nothing is sent before the scenario sends it.
  connectLines(server, label) {
    const def = this.definitions[server];
    check(def, `scenario did not declare server '${server}'`);
    const [command, args, env] = this.direct
      ? [def.command, def.args, { ...getDefaultEnvironment(), ...def.env }]
      : [this.mcpctl, ['--socket', this.socket, 'connect', server], getDefaultEnvironment()];
    const record = { name: label, stderr: '' };
    record.client = new LineSession(label, command, args, {
      env,
      onStderr: (text) => (record.stderr += text),
      onError: (error) => {
        if (!this.closing) this.clientErrors.push({ client: label, error });
      },
    });
    this.clients.push(record);
    return record.client;
  }

  // `mcpctl ARGS...` against this mcpd; fails unless it exits 0. Returns its stdout.
  runMcpctl(args, timeoutMs = 30000) {
    const run = spawnSync(this.mcpctl, ['--socket', this.socket, ...args], { encoding: 'utf8', timeout: timeoutMs });
    if (run.status !== 0) fail(`mcpctl ${args.join(' ')} exited with ${run.status}: ${run.stderr || run.stdout}`);
    return run.stdout;
  }

  // Client-side protocol errors the SDK reported (unknown response ids, unknown progress
  // tokens, unparseable lines); `allow(e)` returns true for the ones a scenario expects.
  takeClientErrors(allow = () => false) {
    const unexpected = this.clientErrors.filter((e) => !allow(e));
    this.clientErrors = [];
    return unexpected;
  }

  // Pids of the processes running `server` below this mcpd (empty with --direct).
  serverPids(server) {
    if (this.direct || !this.daemon) return [];
    const script = this.definitions[server].script;
    return descendants(this.daemon.pid).filter((pid) => readIfExists(`/proc/${pid}/cmdline`).split('\0').includes(script));
  }

  // `mcpctl --json ARGS...` against this mcpd; its parsed stdout.
  mcpctlJson(args) {
    const run = spawnSync(this.mcpctl, ['--socket', this.socket, '--json', ...args], { encoding: 'utf8', timeout: 10000 });
    if (run.status !== 0) fail(`mcpctl ${args.join(' ')} exited with ${run.status}: ${run.stderr || run.stdout}`);
    try {
      return JSON.parse(run.stdout);
    } catch {
      fail(`mcpctl --json ${args.join(' ')} printed no JSON: ${run.stdout}`);
    }
  }

  // Runs a client program to its end, in its own process group (killed on timeout and when the
  // scenario ends); its output is kept for the diagnostics. Returns { status, signal, stdout, stderr }.
  async run(label, command, args, { env = process.env, cwd, timeoutMs = 30000 } = {}) {
    const record = { name: label, stdout: '', stderr: '', status: null };
    this.runs.push(record);
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.running.add(child);
    child.stdout.on('data', (chunk) => (record.stdout += chunk.toString()));
    child.stderr.on('data', (chunk) => (record.stderr += chunk.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    const { status, signal, error } = await new Promise((resolve) => {
      child.on('close', (status, signal) => resolve({ status, signal }));
      child.on('error', (error) => resolve({ error }));
    });
    clearTimeout(timer);
    this.running.delete(child);
    record.status = status;
    if (error) fail(`${label}: could not run ${command}: ${error.message}`);
    if (timedOut) fail(`${label}: ${path.basename(command)} ${args.join(' ')} did not finish within ${timeoutMs} ms`);
    return { status, signal, stdout: record.stdout, stderr: record.stderr };
  }

  // Waits until mcpd reports `server` running: for clients that give a server only seconds.
  async waitRunning(server, timeoutMs = 20000) {
    await waitFor(() => {
      const status = this.mcpctlJson(['status', server]);
      const list = Array.isArray(status) ? status : (status.servers ?? [status]);
      return list.some((s) => s.name === server && s.state === 'running');
    }, timeoutMs, `mcpd to report ${server} running`);
  }

  // How many sessions mcpd has attached so far, from its log ("session N attached ...").
  attachedSessions() {
    return (readIfExists(this.daemonLog).match(/ session \d+ attached /g) ?? []).length;
  }

  // mcpctl on its own, started as an SDK client starts a stdio server (the SDK's default
  // environment: HOME, LOGNAME, PATH, SHELL, TERM, USER): it must reach this mcpd, on
  // /run/user/UID/mcpd/mcpd.sock. Before mcpctl knew that directory it looked in /tmp/mcpd-UID.
  checkDefaultSocket() {
    const env = getDefaultEnvironment();
    const run = spawnSync('mcpctl', ['--json', 'version'], { env, encoding: 'utf8', timeout: 10000 });
    const where = `mcpctl --json version with only ${Object.keys(env).sort().join(', ')} in its environment`;
    check(run.status === 0, `${where} did not reach mcpd on ${this.socket} (exit ${run.status}): ${(run.stderr || run.stdout).trim()}`);
    let reply = null;
    try {
      reply = JSON.parse(run.stdout);
    } catch {
      fail(`${where} printed no JSON: ${run.stdout}`);
    }
    // An mcpctl that does not name its socket in `version` is judged by the daemon's pid alone.
    const socket = reply.client?.socket;
    check(socket === undefined || socket === this.socket, `${where} used ${socket} (${reply.client?.reason}), not ${this.socket}`);
    check(reply.daemon?.pid === this.daemon.pid, `${where} reached mcpd pid ${reply.daemon?.pid}, not this scenario's mcpd (pid ${this.daemon.pid})`);
    log(`mcpctl with the SDK's default environment reaches this mcpd on ${socket ?? this.socket}${reply.client?.reason ? ` (${reply.client.reason})` : ''}`);
  }

  killRunning() {
    for (const child of this.running) killGroup(child);
    this.running.clear();
  }

  async closeClients() {
    this.closing = true;
    await Promise.all(
      this.clients.map(({ client }) => Promise.race([client.close().catch(() => {}), sleep(5000)])),
    );
  }

  diagnostics() {
    const parts = [];
    if (this.daemonLog) parts.push(`--- mcpd output (${this.daemonLog}) ---\n${tail(readIfExists(this.daemonLog), 80)}`);
    for (const { name, stderr } of this.clients) {
      if (stderr.trim()) parts.push(`--- ${name}: stderr of ${this.direct ? 'the server' : 'mcpctl connect'} ---\n${tail(stderr, 20)}`);
    }
    // Of the client programs run, those that failed and the last one (all with INTEROP_VERBOSE=1).
    for (const [i, { name, stdout, stderr, status }] of this.runs.entries()) {
      if (status === 0 && i !== this.runs.length - 1 && process.env.INTEROP_VERBOSE !== '1') continue;
      if (stdout.trim()) parts.push(`--- ${name}: stdout ---\n${tail(stdout, 20)}`);
      if (stderr.trim()) parts.push(`--- ${name}: stderr ---\n${tail(stderr, 20)}`);
    }
    return parts.join('\n');
  }

  removeTmp() {
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

// Runs one scenario: `body(ctx)` with mcpd up, within `timeoutSeconds`. Never returns.
// `extraToml`: registry text added after the servers (groups); `groups`: the names it declares;
// `serverSettings`: registry keys per server name, as TOML values ({memory: {tools: '["a"]'}});
// `daemonToml`: keys added to [daemon] (ctx.options.daemonToml, read again by restartDaemon()).
export async function scenario(name, { servers = ['everything'], timeoutSeconds = 60, userRuntimeDir = false, extraToml = '', groups = [], serverSettings = {}, daemonToml = '' }, body) {
  const options = { ...parseArgs(process.argv.slice(2)), extraToml, groups, serverSettings, daemonToml };
  let ctx = null;
  let finished = false;

  const finish = async (failure) => {
    if (finished) return;
    finished = true;
    let problems = failure ? [failure] : [];
    let diagnostics = '';
    if (ctx) {
      let t = Date.now();
      ctx.killRunning();
      await ctx.closeClients();
      const closeMs = Date.now() - t;
      if (!failure) {
        const errors = ctx.takeClientErrors();
        if (errors.length > 0) {
          problems.push(`unexpected client-side protocol errors:\n${errors.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
        }
      }
      t = Date.now();
      const stopProblem = await ctx.stopDaemon();
      if (stopProblem) problems.push(stopProblem);
      log(`closed ${ctx.clients.length} clients in ${closeMs} ms${ctx.daemon ? `, stopped mcpd in ${Date.now() - t} ms` : ''}`);
      if (problems.length > 0 || process.env.INTEROP_VERBOSE === '1') diagnostics = ctx.diagnostics();
      ctx.removeTmp();
    }
    if (problems.length === 0) {
      if (diagnostics) process.stdout.write(`${diagnostics}\n`);
      log(`PASS: ${name}${options.direct ? ' (--direct, without mcpd)' : ''}`);
      process.exit(0);
    }
    for (const problem of problems) process.stdout.write(`FAIL: ${name}: ${problem}\n`);
    if (diagnostics) process.stdout.write(`${diagnostics}\n`);
    process.exit(1);
  };

  const timer = setTimeout(() => finish(`did not finish within ${timeoutSeconds} s`), timeoutSeconds * 1000);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => finish(`interrupted by ${signal}`));
  process.on('unhandledRejection', (error) => finish(`unhandled rejection: ${error?.stack ?? error}`));

  try {
    ctx = new Context(name, options, servers, userRuntimeDir);
    log(`scenario: ${name} (node ${process.version})${options.direct ? ' (--direct: no mcpd, one server per client)' : ''}`);
    if (!options.direct) await ctx.startDaemon();
    await body(ctx);
    clearTimeout(timer);
    await finish(null);
  } catch (error) {
    clearTimeout(timer);
    await finish(error instanceof ScenarioError ? error.message : (error?.stack ?? String(error)));
  }
}
