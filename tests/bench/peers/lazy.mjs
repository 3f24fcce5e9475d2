// Figure 7 of docs/PERFORMANCE.md: lazy servers (`lazy = true`), which run no process until a
// request needs one and answer sessions from a cache of their lists meanwhile.
//
//   7a. attach: the time from an SDK client creating its stdio transport to its listTools()
//       answer (initialize included), spawning `mcpctl connect everything` where `everything` is
//       a lazy server-everything, cache filled and asleep; side by side, the same client
//       spawning server-everything itself. The lazy server must stay asleep throughout (no
//       process starts: a measurement check, not a judgement of the timings).
//   7b. memory: mcpd's RSS with N lazy servers asleep, their caches loaded from disk by a fresh
//       mcpd; beside it, mcpd with the same N entries not lazy and `autostart = false` (no
//       process, no cache), mcpd with one server, and the N servers running (their processes'
//       total, as if none were lazy).
//
//   node lazy.mjs --bin-dir DIR [--out FILE] [--quick | --smoke] [--only lazy_attach,lazy_memory]
//
// Results go to --out as JSON; progress to stderr. Never a pass/fail on timings.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Daemon, descendants, everything, median, memoryOf, note, parseArgs, percentile, runFigures, sleep, tempDir } from './common.mjs';

const PROFILES = {
  full: { attachRounds: 20, servers: 100, batch: 10, memoryRounds: 3, settleMs: 2000 },
  quick: { attachRounds: 5, servers: 100, batch: 10, memoryRounds: 1, settleMs: 2000 },
  smoke: { attachRounds: 2, servers: 10, batch: 5, memoryRounds: 1, settleMs: 1000 },
};

const toml = (value) => JSON.stringify(value);

// --- mcpd and mcpctl ---

function mcpctl(binDir, socket, args, timeoutMs = 10000) {
  const run = spawnSync(path.join(binDir, 'mcpctl'), ['--socket', socket, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '' };
}

// `mcpctl --json status`, by server name (null while mcpd does not answer).
function statusByName(binDir, socket) {
  const run = mcpctl(binDir, socket, ['--json', 'status']);
  if (run.status !== 0) return null;
  const status = JSON.parse(run.stdout);
  const list = Array.isArray(status) ? status : (status.servers ?? []);
  return Object.fromEntries(list.map((s) => [s.name, s]));
}

// Asleep with a cache: no process, a cache written at some time.
const sleeping = (s) => s?.state === 'stopped' && s.pid === null && Number.isInteger(s.lazy?.cached);

async function waitFor(what, ms, predicate, daemon) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (daemon?.exited) throw new Error(`mcpd exited while waiting for ${what}: ${JSON.stringify(daemon.exited)}\n${daemon.log()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${ms / 1000} s${daemon ? `\n${daemon.log()}` : ''}`);
    await sleep(100);
  }
}

// mcpd on `registry` with its state (the cache) in `stateDir`, once it answers on its socket.
async function startMcpd(binDir, tmp, registry, stateDir, label) {
  const socket = path.join(tmp, `${label}.sock`);
  const env = { ...process.env, STATE_DIRECTORY: stateDir };
  const daemon = new Daemon(path.join(binDir, 'mcpd'), ['--config', registry, '--socket', socket], path.join(tmp, `${label}.log`), env);
  await waitFor('answer from mcpd', 30000, () => statusByName(binDir, socket), daemon);
  return { daemon, socket, status: () => statusByName(binDir, socket) };
}

// The processes below mcpd that run servers: every descendant but its keeper.
function serverProcesses(mcpdPid) {
  return descendants(mcpdPid).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'mcpd-keeper';
    } catch {
      return false;
    }
  });
}

// mcpd's own memory (KiB): VmRSS and VmHWM from /proc/PID/status, PSS and private from
// smaps_rollup.
function mcpdMemory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (text, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return {
    rss_kib: kib(status, 'VmRSS'),
    hwm_kib: kib(status, 'VmHWM'),
    pss_kib: kib(rollup, 'Pss'),
    private_kib: kib(rollup, 'Private_Clean') + kib(rollup, 'Private_Dirty'),
  };
}

// --- 7a. attach to tools/list ---

// One SDK client from creating its transport to the listTools() answer; the transport spawns
// `command args`. Returns the milliseconds and the tool names.
async function attachOnce(command, args, name) {
  const start = process.hrtime.bigint();
  const transport = new StdioClientTransport({ command, args, env: getDefaultEnvironment(), stderr: 'ignore' });
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: 30000 });
    const listed = await client.listTools(undefined, { timeout: 30000 });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    return { ms, tools: listed.tools.map((t) => t.name) };
  } finally {
    await Promise.race([client.close().catch(() => {}), sleep(5000)]);
  }
}

async function lazyAttach(options, p) {
  const tmp = tempDir();
  let mcpd = null;
  try {
    const { script } = everything();
    const stateDir = path.join(tmp, 'state');
    const registry = path.join(tmp, 'attach.toml');
    fs.writeFileSync(
      registry,
      [
        '[daemon]',
        'log_level = "warning"',
        '[servers.everything]',
        `command = ${toml(process.execPath)}`,
        `args = [${toml(script)}, "stdio"]`,
        'lazy = true',
        'idle_timeout = "1s"',
        'restart = "never"',
        'stop_grace = "500ms"',
        'health_interval = "0s"',
        '',
      ].join('\n'),
    );
    // Fill the cache: start the server once, then let it stop (idle_timeout 1s).
    mcpd = await startMcpd(options.binDir, tmp, registry, stateDir, 'attach');
    const warm = mcpctl(options.binDir, mcpd.socket, ['warm', 'everything', '--timeout', '60s'], 90000);
    if (warm.status !== 0) throw new Error(`mcpctl warm everything failed (${warm.status}): ${warm.stderr}${warm.stdout}`);
    await waitFor('sleeping everything with its cache', 30000, () => sleeping(mcpd.status()?.everything), mcpd.daemon);
    // A fresh mcpd, which knows the server from its cache file only.
    await mcpd.daemon.stop();
    mcpd = await startMcpd(options.binDir, tmp, registry, stateDir, 'attach');
    const before = mcpd.status().everything;
    if (!sleeping(before)) throw new Error(`everything is not asleep with a cache after mcpd restarted: ${JSON.stringify(before)}`);
    note(`lazy attach: everything asleep, cache of ${new Date(before.lazy.cached * 1000).toISOString()}`);

    const paths = {
      lazy: [path.join(options.binDir, 'mcpctl'), ['--socket', mcpd.socket, 'connect', 'everything']],
      direct: [process.execPath, [script, 'stdio']],
    };
    // One unmeasured attach each (disk cache, node's compile cache).
    const tools = {};
    for (const [label, [command, args]] of Object.entries(paths)) tools[label] = (await attachOnce(command, args, `warm-up-${label}`)).tools;
    // server-everything lists some tools only to clients that declare roots, sampling or
    // elicitation, as mcpd's handshake does: the cached list holds the direct client's and those.
    const missing = tools.direct.filter((t) => !tools.lazy.includes(t));
    if (tools.direct.length === 0 || missing.length > 0) {
      throw new Error(`the cached tools/list lacks tools the server lists: ${missing.join(', ') || '(the server lists none)'}`);
    }
    const samples = { lazy: [], direct: [] };
    const pidsSeen = new Set();
    for (let round = 0; round < p.attachRounds; round++) {
      const order = round % 2 === 0 ? ['lazy', 'direct'] : ['direct', 'lazy'];
      for (const label of order) {
        const [command, args] = paths[label];
        samples[label].push((await attachOnce(command, args, `attach-${label}-${round}`)).ms);
      }
      const s = mcpd.status().everything;
      if (s.pid !== null) pidsSeen.add(s.pid);
      for (const pid of serverProcesses(mcpd.daemon.pid)) pidsSeen.add(pid);
    }
    const after = mcpd.status().everything;
    const asleep = {
      state: after.state,
      pid: after.pid,
      last_exit: after.last_exit ?? null,
      restarts: after.restarts ?? 0,
      processes_seen: pidsSeen.size,
      answered_from_cache_before: before.lazy.answered_from_cache,
      answered_from_cache_after: after.lazy.answered_from_cache,
    };
    // Each measured and warm-up attach: at least initialize and tools/list from the cache.
    const attaches = p.attachRounds + 1;
    asleep.pass =
      sleeping(after) && asleep.last_exit === null && asleep.restarts === 0 && pidsSeen.size === 0 && after.lazy.answered_from_cache - before.lazy.answered_from_cache >= 2 * attaches;
    if (!asleep.pass) throw new Error(`the lazy server did not stay asleep, or did not answer from its cache: ${JSON.stringify(asleep)}`);
    const summary = {};
    for (const [label, values] of Object.entries(samples)) summary[label] = { median_ms: median(values), p90_ms: percentile(values, 90), min_ms: Math.min(...values) };
    summary.ratio_median = summary.lazy.median_ms / summary.direct.median_ms;
    note(`lazy attach: mcpctl connect to the sleeping server ${summary.lazy.median_ms.toFixed(1)} ms (p90 ${summary.lazy.p90_ms.toFixed(1)}), server-everything directly ${summary.direct.median_ms.toFixed(1)} ms (p90 ${summary.direct.p90_ms.toFixed(1)}); ${asleep.answered_from_cache_after - asleep.answered_from_cache_before} answers from the cache, no process`);
    return { rounds: p.attachRounds, tools: { lazy: tools.lazy.length, direct: tools.direct.length }, samples, summary, asleep };
  } finally {
    await mcpd?.daemon.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// --- 7b. memory with N sleeping servers ---

const serverName = (i) => `demo-${String(i).padStart(3, '0')}`;

function writeRegistry(file, binDir, count, settings) {
  const lines = ['[daemon]', 'log_level = "warning"'];
  for (let i = 1; i <= count; i++) {
    lines.push(
      '',
      `[servers.${serverName(i)}]`,
      `command = ${toml(path.join(binDir, 'mcpd-demo-server'))}`,
      'args = ["--tick-ms=0"]',
      'era = "legacy"',
      'restart = "never"',
      'stop_grace = "500ms"',
      'health_interval = "0s"',
      ...settings,
    );
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

async function lazyMemory(options, p) {
  const tmp = tempDir();
  let mcpd = null;
  const n = p.servers;
  const names = Array.from({ length: n }, (_, i) => serverName(i + 1));
  try {
    const stateDir = path.join(tmp, 'state');
    const registries = {
      one: path.join(tmp, 'one.toml'),
      configured: path.join(tmp, 'configured.toml'),
      lazy: path.join(tmp, 'lazy.toml'),
      running: path.join(tmp, 'running.toml'),
    };
    writeRegistry(registries.one, options.binDir, 1, ['autostart = false']);
    writeRegistry(registries.configured, options.binDir, n, ['autostart = false']);
    writeRegistry(registries.lazy, options.binDir, n, ['lazy = true', 'idle_timeout = "1s"']);
    writeRegistry(registries.running, options.binDir, n, []);

    // Fill the N caches, a batch at a time, and wait for every server to be asleep again.
    const warmStart = Date.now();
    mcpd = await startMcpd(options.binDir, tmp, registries.lazy, stateDir, 'lazy-fill');
    for (let i = 0; i < n; i += p.batch) {
      const batch = names.slice(i, i + p.batch);
      const warm = mcpctl(options.binDir, mcpd.socket, ['warm', ...batch, '--timeout', '60s'], 90000);
      if (warm.status !== 0) throw new Error(`mcpctl warm ${batch.join(' ')} failed (${warm.status}): ${warm.stderr}${warm.stdout}`);
    }
    await waitFor(`all ${n} servers asleep with their caches`, 60000, () => {
      const status = mcpd.status();
      return status && names.every((name) => sleeping(status[name]));
    }, mcpd.daemon);
    await waitFor('no server process left', 10000, () => serverProcesses(mcpd.daemon.pid).length === 0, mcpd.daemon);
    const cacheFiles = fs.readdirSync(path.join(stateDir, 'cache')).length;
    if (cacheFiles !== n) throw new Error(`expected ${n} cache files, found ${cacheFiles}`);
    const fill = { seconds: (Date.now() - warmStart) / 1000, mcpd_hwm_kib: mcpdMemory(mcpd.daemon.pid).hwm_kib, cache_files: cacheFiles };
    fill.cache_bytes = fs.readdirSync(path.join(stateDir, 'cache')).reduce((sum, f) => sum + fs.statSync(path.join(stateDir, 'cache', f)).size, 0);
    await mcpd.daemon.stop();
    mcpd = null;
    note(`lazy memory: ${n} caches filled in ${fill.seconds.toFixed(1)} s (${(fill.cache_bytes / 1024).toFixed(0)} KiB on disk)`);

    const rounds = [];
    for (let round = 0; round < p.memoryRounds; round++) {
      const r = {};
      for (const setup of ['one', 'configured', 'lazy', 'running']) {
        // Each set-up a fresh mcpd; the lazy one loads its catalogs from the cache files.
        mcpd = await startMcpd(options.binDir, tmp, registries[setup], stateDir, `${setup}-${round}`);
        const expect = setup === 'one' ? [names[0]] : names;
        if (setup === 'running') {
          await waitFor(`all ${n} servers running`, 60000, () => {
            const status = mcpd.status();
            return status && expect.every((name) => status[name]?.state === 'running');
          }, mcpd.daemon);
        }
        await sleep(p.settleMs);
        const status = mcpd.status();
        const servers = serverProcesses(mcpd.daemon.pid);
        if (setup === 'lazy' && !expect.every((name) => sleeping(status[name]) && status[name].last_exit === null)) {
          throw new Error(`after mcpd restarted, not all ${n} lazy servers are asleep with a cache and never started: ${JSON.stringify(expect.map((name) => status[name]).find((s) => !sleeping(s) || s.last_exit !== null))}`);
        }
        if (setup !== 'running' && servers.length !== 0) throw new Error(`${setup}: ${servers.length} server processes run, expected none`);
        if (setup === 'running' && !expect.every((name) => status[name]?.state === 'running')) throw new Error(`running: not all ${n} servers run any more`);
        r[setup] = { servers: expect.length, mcpd: mcpdMemory(mcpd.daemon.pid) };
        if (setup === 'running') {
          r[setup].server_processes = memoryOf(servers);
        }
        await mcpd.daemon.stop();
        mcpd = null;
      }
      note(
        `lazy memory round ${round + 1}: mcpd RSS with 1 server ${(r.one.mcpd.rss_kib / 1024).toFixed(1)} MiB, ${n} configured ${(r.configured.mcpd.rss_kib / 1024).toFixed(1)} MiB, ${n} asleep ${(r.lazy.mcpd.rss_kib / 1024).toFixed(1)} MiB (peak ${(r.lazy.mcpd.hwm_kib / 1024).toFixed(1)}); ${n} running: mcpd ${(r.running.mcpd.rss_kib / 1024).toFixed(1)} MiB + servers ${(r.running.server_processes.rss_kib / 1024).toFixed(1)} MiB in ${r.running.server_processes.processes} processes`,
      );
      rounds.push(r);
    }
    const med = (f) => median(rounds.map(f));
    const summary = {};
    for (const setup of ['one', 'configured', 'lazy', 'running']) {
      summary[setup] = { servers: rounds[0][setup].servers };
      for (const k of ['rss_kib', 'hwm_kib', 'pss_kib', 'private_kib']) summary[setup][k] = med((r) => r[setup].mcpd[k]);
    }
    summary.running.server_processes = {};
    for (const k of ['processes', 'rss_kib', 'pss_kib', 'private_kib']) summary.running.server_processes[k] = med((r) => r.running.server_processes[k]);
    summary.lazy_above_one_kib_per_server = (summary.lazy.rss_kib - summary.one.rss_kib) / (n - 1);
    summary.lazy_above_configured_kib_per_server = (summary.lazy.rss_kib - summary.configured.rss_kib) / n;
    summary.running_kib_per_server = summary.running.server_processes.rss_kib / n;
    return { servers: n, batch: p.batch, settle_ms: p.settleMs, fill, rounds, summary };
  } finally {
    await mcpd?.daemon.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const options = parseArgs(process.argv.slice(2));
await runFigures(options, PROFILES[options.profile], [
  ['lazy_attach', lazyAttach],
  ['lazy_memory', lazyMemory],
], 10);
