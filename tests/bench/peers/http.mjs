// Figure 8 of docs/PERFORMANCE.md: what mcpd's HTTP front door (MCP Streamable HTTP at
// /mcp/NAME, docs/HTTP.md) adds to a call. The same SDK client calls the `echo` tool of the same
// mcpd-demo-server, side by side in interleaved turns:
//
//   direct          StdioClientTransport spawning mcpd-demo-server
//   mcpctl connect  StdioClientTransport spawning `mcpctl connect demo` (mcpd's socket)
//   mcpd HTTP       StreamableHTTPClientTransport to http://127.0.0.1:PORT/mcp/demo, bearer token
//   mcp-proxy       StreamableHTTPClientTransport to mcp-proxy in front of mcpd-demo-server
//   supergateway    the same to supergateway (stateful Streamable HTTP), only with --isolated
//
//   8a. http_latency: N sequential calls per round after a warm-up, p50 and p99, each set-up's
//       added over direct (per round, then the median over rounds).
//   8b. http_load: K clients per set-up, each one call at a time, for a few seconds: calls/s,
//       and the CPU of every process but the client's per call.
//
//   node http.mjs --bin-dir DIR [--out FILE] [--quick | --smoke] [--isolated]
//                 [--only http_latency,http_load]
//
// --isolated: this runs in a network namespace with only loopback up (run.sh makes one), where
// supergateway, which binds every address, may run. Results go to --out as JSON; progress to
// stderr. Never a pass/fail on timings.

import fs from 'node:fs';
import path from 'node:path';

import { Direct, Mcpd, McpProxy, Supergateway, cpuOf, freePort, median, note, parseArgs, percentile, resultText, runFigures, tempDir } from './common.mjs';

const PROFILES = {
  full: { warmup: 50, calls: 200, chunk: 20, rounds: 5, clients: 8, seconds: 2, loadRounds: 3 },
  quick: { warmup: 20, calls: 100, chunk: 20, rounds: 3, clients: 8, seconds: 1, loadRounds: 2 },
  smoke: { warmup: 3, calls: 10, chunk: 5, rounds: 1, clients: 2, seconds: 0.5, loadRounds: 1 },
};

// mcp-proxy bundles a yargs-parser that refuses node older than 20.
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

function demoServer(binDir) {
  return { name: 'demo', command: path.join(binDir, 'mcpd-demo-server'), args: ['--tick-ms=0'], settings: ['era = "legacy"'] };
}

async function makeSetups(options, tmp) {
  const server = demoServer(options.binDir);
  const named = (setup, label) => Object.assign(setup, { label });
  const setups = [
    named(new Direct({ server }), 'direct'),
    named(new Mcpd(options.binDir, tmp, { server }), 'mcpctl connect'),
    named(new Mcpd(options.binDir, tmp, { server, via: 'http' }), 'mcpd HTTP'),
  ];
  if (NODE_MAJOR >= 20) setups.push(named(new McpProxy(tmp, await freePort(), 'http', { server }), 'mcp-proxy'));
  if (options.isolated) setups.push(named(new Supergateway(tmp, await freePort(), 'http', { server }), 'supergateway'));
  return setups;
}

function notesFor(options) {
  const notes = [];
  if (NODE_MAJOR < 20) notes.push(`mcp-proxy skipped: it needs node 20 or later (this is ${process.version})`);
  if (!options.isolated) notes.push('supergateway skipped: it binds every address and runs only in the network namespace run.sh creates');
  return notes.join('; ');
}

async function echo(record, text) {
  const result = await record.client.callTool({ name: 'echo', arguments: { text } }, undefined, { timeout: 20000 });
  return resultText(result);
}

// Start every set-up, run `body(setups)`, stop them all.
async function withSetups(options, body) {
  const tmp = tempDir();
  const setups = await makeSetups(options, tmp);
  try {
    for (const s of setups) await s.start();
    return { setups: setups.map((s) => s.label), isolated: options.isolated, note: notesFor(options), ...(await body(setups)) };
  } finally {
    for (const s of setups) await s.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// Each round's value per set-up, then the median over rounds.
function summarize(rounds, keys) {
  const summary = {};
  for (const label of Object.keys(rounds[0])) {
    summary[label] = {};
    for (const k of keys) summary[label][k] = median(rounds.map((r) => r[label][k]));
  }
  return summary;
}

// --- 8a. sequential calls ---

async function httpLatency(options, p) {
  return withSetups(options, async (setups) => {
    const paths = [];
    for (const setup of setups) {
      const record = await setup.connect(`latency-${setup.label}`);
      for (let i = 0; i < p.warmup; i++) {
        const text = `warm up ${i}`;
        if ((await echo(record, text)) !== text) throw new Error(`${setup.label}: echo did not return its text`);
      }
      paths.push({ label: setup.label, record });
    }
    const rounds = [];
    for (let round = 0; round < p.rounds; round++) {
      const samples = new Map(paths.map(({ label }) => [label, []]));
      // Turns of `chunk` calls each, the first set-up of a turn moving along, so that load
      // from elsewhere falls on all alike.
      for (let done = 0, turn = 0; done < p.calls; done += p.chunk, turn++) {
        for (let k = 0; k < paths.length; k++) {
          const { label, record } = paths[(turn + k) % paths.length];
          const into = samples.get(label);
          for (let i = 0; i < p.chunk; i++) {
            const start = process.hrtime.bigint();
            await echo(record, 'hello');
            into.push(Number(process.hrtime.bigint() - start) / 1000);
          }
        }
      }
      const r = {};
      for (const [label, values] of samples) r[label] = { p50_us: percentile(values, 50), p99_us: percentile(values, 99) };
      for (const label of Object.keys(r)) {
        r[label].added_p50_us = r[label].p50_us - r.direct.p50_us;
        r[label].added_p99_us = r[label].p99_us - r.direct.p99_us;
      }
      note(`http latency round ${round + 1}: ${Object.entries(r).map(([k, v]) => `${k} ${v.p50_us.toFixed(0)} us`).join(', ')}`);
      rounds.push(r);
    }
    return { warmup: p.warmup, calls_per_round: p.calls, chunk: p.chunk, rounds, summary: summarize(rounds, ['p50_us', 'p99_us', 'added_p50_us', 'added_p99_us']) };
  });
}

// --- 8b. concurrent clients ---

// `clients` each making one call at a time for `seconds`.
async function drive(clients, seconds) {
  const until = Date.now() + seconds * 1000;
  let calls = 0;
  let wrong = 0;
  const one = async (record, index) => {
    for (let j = 0; Date.now() < until; j++) {
      const text = `client ${index} call ${j}`;
      try {
        if ((await echo(record, text)) !== text) wrong++;
      } catch {
        wrong++;
      }
      calls++;
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(clients.map(one));
  return { calls, seconds: Number(process.hrtime.bigint() - start) / 1e9, wrong };
}

async function httpLoad(options, p) {
  return withSetups(options, async (setups) => {
    const loads = [];
    for (const setup of setups) {
      const clients = [];
      for (let i = 0; i < p.clients; i++) clients.push(await setup.connect(`load-${setup.label}-${i}`));
      for (const c of clients) for (let i = 0; i < 5; i++) await echo(c, `warm up ${i}`);
      // Every process but the client: the server(s), and mcpd, mcpctl or the proxy.
      loads.push({ label: setup.label, clients, pids: () => [...setup.serverPids(), ...clients.flatMap((c) => c.pids())] });
    }
    const rounds = [];
    for (let round = 0; round < p.loadRounds; round++) {
      const r = {};
      for (let k = 0; k < loads.length; k++) {
        const { label, clients, pids } = loads[(round + k) % loads.length];
        const cpu = cpuOf(pids());
        const m = await drive(clients, p.seconds);
        m.calls_per_s = m.calls / m.seconds;
        m.cpu_us_per_call = (cpuOf(pids()) - cpu) / 1000 / m.calls;
        r[label] = m;
      }
      for (const label of Object.keys(r)) r[label].added_cpu_us_per_call = r[label].cpu_us_per_call - r.direct.cpu_us_per_call;
      note(`http load round ${round + 1}: ${Object.entries(r).map(([k, v]) => `${k} ${v.calls_per_s.toFixed(0)} calls/s`).join(', ')}`);
      rounds.push(r);
    }
    const summary = summarize(rounds, ['calls_per_s', 'cpu_us_per_call', 'added_cpu_us_per_call']);
    for (const { label, clients } of loads) {
      summary[label].wrong = rounds.reduce((n, r) => n + r[label].wrong, 0);
      summary[label].client_errors = clients.reduce((n, c) => n + c.errors.length, 0);
    }
    return { clients: p.clients, seconds: p.seconds, rounds, summary };
  });
}

const options = parseArgs(process.argv.slice(2));
await runFigures(options, PROFILES[options.profile], [
  ['http_latency', httpLatency],
  ['http_load', httpLoad],
], 5);
