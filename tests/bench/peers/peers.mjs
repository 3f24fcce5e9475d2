// Figures 5 and 6 of docs/PERFORMANCE.md, driven by the official TypeScript SDK client:
//
//   5. agents: 8 agents using server-everything, each with its own copy (direct) or all
//      through mcpd (`mcpctl connect`): total RSS, PSS and process count of both set-ups.
//   6. peers: mcpd, mcp-proxy and supergateway in front of the same server-everything:
//      added latency over a direct stdio connection, throughput of 8 concurrent clients,
//      memory, and correctness checks (own replies only, progress, cancellation).
//
//   node peers.mjs --bin-dir DIR [--out FILE] [--quick | --smoke] [--isolated] [--pinned]
//                  [--only agents,peers_latency,peers_load]
//
// --pinned only records that the caller runs this pinned to one CPU (taskset), as run.sh does
// for a second take of the latency.
// --isolated says this runs inside a network namespace of its own with only loopback up
// (tests/bench/run.sh makes one): supergateway, which cannot be told to bind 127.0.0.1, only
// runs then. Results go to --out as JSON; progress to stderr. Never a pass/fail on timings.

import fs from 'node:fs';

import {
  Direct,
  Mcpd,
  McpProxy,
  Supergateway,
  cpuOf,
  freePort,
  median,
  memoryOf,
  note,
  parseArgs,
  percentile,
  resultText,
  runFigures,
  sleep,
  tempDir,
} from './common.mjs';

const PROFILES = {
  full: { agents: 8, agentRounds: 2, latencyCalls: 600, latencyChunk: 25, latencyRounds: 5, clients: 8, window: 4, calls: 3000, seconds: 4, throughputRounds: 3 },
  quick: { agents: 8, agentRounds: 1, latencyCalls: 200, latencyChunk: 25, latencyRounds: 3, clients: 8, window: 4, calls: 1000, seconds: 2, throughputRounds: 2 },
  smoke: { agents: 2, agentRounds: 1, latencyCalls: 10, latencyChunk: 5, latencyRounds: 1, clients: 2, window: 2, calls: 20, seconds: 2, throughputRounds: 1 },
};

const LONG_TOOL = 'trigger-long-running-operation';
const within = (ms, promise, what) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what}: no answer within ${ms} ms`)))]);

async function echo(record, message) {
  const result = await record.client.callTool({ name: 'echo', arguments: { message } }, undefined, { timeout: 20000 });
  return resultText(result);
}

// --- 5. agents ---

async function agents(options, p) {
  const rounds = [];
  for (let round = 0; round < p.agentRounds; round++) {
    const r = {};
    for (const make of [() => new Direct(), (tmp) => new Mcpd(options.binDir, tmp)]) {
      const tmp = tempDir();
      const setup = make(tmp);
      try {
        await setup.start();
        const clients = [];
        for (let i = 0; i < p.agents; i++) clients.push(await setup.connect(`agent-${i}`));
        for (const c of clients) {
          await c.client.listTools();
          for (let i = 0; i < 3; i++) await echo(c, `agent warm-up ${i}`);
        }
        await sleep(1000);
        const server = memoryOf(setup.serverPids());
        const perAgent = memoryOf(clients.flatMap((c) => c.pids()));
        const total = memoryOf([...setup.serverPids(), ...clients.flatMap((c) => c.pids())]);
        r[setup.label] = { total, server, agent_side: perAgent };
        note(`agents: ${setup.label}: ${total.processes} processes, ${(total.rss_kib / 1024).toFixed(1)} MiB RSS, ${(total.pss_kib / 1024).toFixed(1)} MiB PSS`);
      } finally {
        await setup.stop();
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    }
    for (const k of ['rss_kib', 'pss_kib', 'processes']) r[`ratio_${k}`] = r.mcpd.total[k] / r.direct.total[k];
    rounds.push(r);
  }
  const summary = {};
  for (const label of ['direct', 'mcpd']) {
    summary[label] = {};
    for (const k of ['processes', 'rss_kib', 'pss_kib', 'private_kib']) summary[label][k] = median(rounds.map((r) => r[label].total[k]));
    summary[label].names = rounds[0][label].total.names;
  }
  for (const k of ['rss_kib', 'pss_kib', 'processes']) summary[`ratio_${k}`] = median(rounds.map((r) => r[`ratio_${k}`]));
  return { agents: p.agents, rounds, summary };
}

// --- 6. peers ---

// mcp-proxy bundles a yargs-parser that refuses node older than 20.
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

async function makeSetups(options, tmp) {
  const setups = [new Direct(), new Mcpd(options.binDir, tmp)];
  if (NODE_MAJOR >= 20) {
    for (const via of ['stdio', 'http']) setups.push(new McpProxy(tmp, await freePort(), via));
  }
  if (options.isolated) {
    for (const via of ['stdio', 'http']) setups.push(new Supergateway(tmp, await freePort(), via));
  }
  return setups;
}

// Sequential echo round trips; the set-ups take turns every `latencyChunk` calls.
async function latency(setups, p) {
  const paths = [];
  for (const setup of setups) {
    const record = await setup.connect(`latency-${setup.label}`);
    for (let i = 0; i < 50; i++) await echo(record, 'warm up');
    paths.push({ setup, record });
  }
  const rounds = [];
  for (let round = 0; round < p.latencyRounds; round++) {
    const samples = new Map(paths.map(({ setup }) => [setup.label, []]));
    for (let done = 0; done < p.latencyCalls; done += p.latencyChunk) {
      for (const { setup, record } of paths) {
        const into = samples.get(setup.label);
        for (let i = 0; i < p.latencyChunk; i++) {
          const start = process.hrtime.bigint();
          await echo(record, 'hello');
          into.push(Number(process.hrtime.bigint() - start) / 1000);
        }
      }
    }
    const r = {};
    for (const [label, values] of samples) r[label] = { p50_us: percentile(values, 50), p99_us: percentile(values, 99) };
    for (const label of Object.keys(r)) r[label].added_p50_us = r[label].p50_us - r.direct.p50_us;
    note(`peers latency round ${round + 1}: ${Object.entries(r).map(([k, v]) => `${k} ${v.p50_us.toFixed(0)} us`).join(', ')}`);
    rounds.push(r);
  }
  const summary = {};
  for (const { setup } of paths) {
    summary[setup.label] = {};
    for (const k of ['p50_us', 'p99_us', 'added_p50_us']) summary[setup.label][k] = median(rounds.map((r) => r[setup.label][k]));
  }
  return { calls_per_round: p.latencyCalls, rounds, summary };
}

// `clients` each keeping `window` echo calls in flight until `calls` are answered or
// `seconds` have passed.
async function pipeline(clients, calls, window, seconds) {
  const until = Date.now() + seconds * 1000;
  let sent = 0;
  let answered = 0;
  let mismatched = 0;
  let failed = 0;
  const one = async (record, index) => {
    while (sent < calls && Date.now() < until) {
      const message = `client ${index} call ${sent++}`;
      try {
        if ((await echo(record, message)) !== `Echo: ${message}`) mismatched++;
      } catch {
        failed++;
      }
      answered++;
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(clients.flatMap((record, index) => Array.from({ length: window }, () => one(record, index))));
  const took = Number(process.hrtime.bigint() - start) / 1e9;
  return { calls: answered, seconds: took, calls_per_s: answered / took, mismatched, failed };
}

async function throughputAndMemory(setup, p) {
  const clients = [];
  for (let i = 0; i < p.clients; i++) clients.push(await setup.connect(`load-${i}`));
  for (const c of clients) {
    await c.client.listTools();
    for (let i = 0; i < 5; i++) await echo(c, `warm up ${i}`);
  }
  await sleep(500);
  const server = memoryOf(setup.serverPids());
  const clientSide = memoryOf(clients.flatMap((c) => c.pids()));
  const rounds = [];
  for (let round = 0; round < p.throughputRounds; round++) {
    const cpuServer = cpuOf(setup.serverPids());
    const cpuClientSide = cpuOf(clients.flatMap((c) => c.pids()));
    const m = await pipeline(clients, p.calls, p.window, p.seconds);
    m.server_cpu_us_per_call = (cpuOf(setup.serverPids()) - cpuServer) / 1000 / m.calls;
    m.stdio_process_cpu_us_per_call = (cpuOf(clients.flatMap((c) => c.pids())) - cpuClientSide) / 1000 / m.calls;
    rounds.push(m);
  }
  const errors = clients.reduce((n, c) => n + c.errors.length, 0);
  const summary = {
    calls_per_s: median(rounds.map((r) => r.calls_per_s)),
    server_cpu_us_per_call: median(rounds.map((r) => r.server_cpu_us_per_call)),
    stdio_process_cpu_us_per_call: median(rounds.map((r) => r.stdio_process_cpu_us_per_call)),
    mismatched: rounds.reduce((n, r) => n + r.mismatched, 0),
    failed: rounds.reduce((n, r) => n + r.failed, 0),
    client_errors: errors,
  };
  note(`peers throughput ${setup.label}: ${summary.calls_per_s.toFixed(0)} calls/s, ${server.processes} server-side processes ${(server.rss_kib / 1024).toFixed(1)} MiB RSS`);
  return { clients: p.clients, window: p.window, rounds, summary, memory: { server, client_side: clientSide } };
}

// --- correctness checks (each bounded in time; a failure is recorded, never thrown) ---

async function check(name, body) {
  try {
    const detail = await within(30000, body(), name);
    return { pass: true, detail: detail ?? '' };
  } catch (error) {
    return { pass: false, detail: String(error?.message ?? error).slice(0, 400) };
  }
}

// Four clients, twenty interleaved calls each, all in flight together: every reply its own.
async function ownReplies(setup) {
  const clients = [];
  for (let i = 0; i < 4; i++) clients.push(await setup.connect(`own-${i}`));
  const calls = [];
  for (let j = 0; j < 20; j++) {
    clients.forEach((c, i) => {
      const message = `own ${i} call ${j} ${Math.random().toString(36).slice(2)}`;
      calls.push(echo(c, message).then((text) => text === `Echo: ${message}`, () => false));
    });
  }
  const ok = (await Promise.all(calls)).filter(Boolean).length;
  const errors = clients.flatMap((c) => c.errors);
  if (ok !== calls.length) throw new Error(`${calls.length - ok} of ${calls.length} replies were not the caller's own`);
  if (errors.length > 0) throw new Error(`client-side errors: ${errors.slice(0, 3).join('; ')}`);
  return `${calls.length} replies, each its caller's`;
}

// Two clients run the long tool with progress at once (same request ids, so the same tokens):
// each must see only its own notifications (a final one just after the result aside).
async function progress(setup) {
  const runs = [
    { steps: 4, seen: [] },
    { steps: 6, seen: [] },
  ];
  const clients = [];
  for (let i = 0; i < runs.length; i++) clients.push(await setup.connect(`progress-${i}`));
  const results = await Promise.all(
    runs.map((run, i) =>
      clients[i].client.callTool({ name: LONG_TOOL, arguments: { duration: run.steps * 0.25, steps: run.steps } }, undefined, {
        onprogress: (p) => run.seen.push(p),
        timeout: 20000,
      }),
    ),
  );
  for (const [i, run] of runs.entries()) {
    if (!resultText(results[i]).includes(`Steps: ${run.steps}`)) throw new Error(`client ${i} got another client's result`);
    const foreign = run.seen.filter((p) => p.total !== run.steps);
    if (foreign.length > 0) throw new Error(`client ${i} got ${foreign.length} progress notifications of another client`);
    const late = clients[i].errors.filter((e) => /unknown token/.test(e) && !e.includes(`"progress":${run.steps},`));
    if (late.length > 0) throw new Error(`client ${i}: ${late[0].slice(0, 200)}`);
    if (run.seen.length < run.steps - 1) throw new Error(`client ${i} got ${run.seen.length} of ${run.steps} progress notifications`);
  }
  return `each client saw only its own progress (${runs.map((r) => r.seen.length).join(' and ')} notifications)`;
}

// A cancelled call rejects, its late response never arrives, and the client carries on.
async function cancellation(setup) {
  const a = await setup.connect('cancel-a');
  const controller = new AbortController();
  const started = Date.now();
  const call = a.client.callTool({ name: LONG_TOOL, arguments: { duration: 1.5, steps: 3 } }, undefined, {
    signal: controller.signal,
    timeout: 20000,
  });
  setTimeout(() => controller.abort('cancelled by the benchmark'), 300);
  const outcome = await call.then(
    () => 'resolved',
    () => 'rejected',
  );
  if (outcome !== 'rejected') throw new Error('the aborted call resolved');
  if ((await echo(a, 'after cancel')) !== 'Echo: after cancel') throw new Error('echo after the cancel failed');
  await sleep(Math.max(0, 2000 - (Date.now() - started)));
  const late = a.errors.filter((e) => /unknown message id/i.test(e));
  if (late.length > 0) throw new Error(`the cancelled call's response still arrived: ${late[0].slice(0, 200)}`);
  return 'rejected at once, no late response, next call fine';
}

// supergateway's default SSE mode: does a second client get served alongside the first?
async function sseSecondClient(tmp) {
  const gateway = new Supergateway(tmp, await freePort(), 'http', { sse: true });
  try {
    await gateway.start();
    const first = await gateway.connect('sse-first');
    await echo(first, 'first');
    const second = await within(10000, gateway.connect('sse-second'), 'a second SSE client').catch((e) => e);
    await sleep(300);
    if (!gateway.alive()) return { pass: false, detail: `the gateway exited when a second client connected (${JSON.stringify(gateway.daemon.exited)})` };
    if (second instanceof Error) return { pass: false, detail: second.message };
    const texts = await Promise.all([echo(first, 'one'), echo(second, 'two')]);
    return { pass: texts[0] === 'Echo: one' && texts[1] === 'Echo: two', detail: `replies: ${texts.join(', ')}` };
  } catch (error) {
    return { pass: false, detail: String(error?.message ?? error).slice(0, 300) };
  } finally {
    await gateway.stop();
  }
}

async function checks(setup) {
  const result = {};
  for (const [name, body] of [
    ['own_replies', ownReplies],
    ['progress', progress],
    ['cancellation', cancellation],
  ]) {
    result[name] = await check(name, () => body(setup));
    note(`peers check ${setup.label}: ${name}: ${result[name].pass ? 'pass' : 'FAIL'} (${result[name].detail})`);
  }
  return result;
}

function notesFor(options) {
  const notes = [];
  if (NODE_MAJOR < 20) notes.push(`mcp-proxy skipped: it needs node 20 or later (this is ${process.version})`);
  if (!options.isolated) notes.push('supergateway skipped: it binds every address and runs only in the network namespace run.sh creates');
  return notes.join('; ');
}

// Latency of every set-up side by side (run.sh runs this part pinned to one CPU as well).
async function peersLatency(options, p) {
  const tmp = tempDir();
  const setups = await makeSetups(options, tmp);
  try {
    for (const s of setups) await s.start();
    return { setups: setups.map((s) => s.label), pinned: options.pinned, note: notesFor(options), ...(await latency(setups, p)) };
  } finally {
    for (const s of setups) await s.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

// Throughput, memory and the correctness checks, one set-up at a time.
async function peersLoad(options, p) {
  const tmp = tempDir();
  try {
    return await peersLoadIn(options, p, tmp);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function peersLoadIn(options, p, tmp) {
  const setups = await makeSetups(options, tmp);
  const result = { setups: setups.map((s) => s.label), isolated: options.isolated, note: notesFor(options), load: {}, checks: {} };
  for (const s of setups) {
    try {
      await s.start();
      result.load[s.label] = await throughputAndMemory(s, p);
      if (s.label !== 'direct' && !s.label.includes('stdio bridge')) result.checks[s.label] = await checks(s);
    } catch (error) {
      result.load[s.label] = { error: String(error?.stack ?? error).slice(0, 600) };
      note(`peers ${s.label} FAILED: ${error?.message ?? error}`);
    } finally {
      await s.stop();
    }
  }
  if (options.isolated) {
    result.checks['supergateway SSE (its default mode)'] = { two_clients: await sseSecondClient(tmp) };
    note(`peers check supergateway SSE: two clients: ${JSON.stringify(result.checks['supergateway SSE (its default mode)'].two_clients)}`);
  }
  return result;
}

const options = parseArgs(process.argv.slice(2));
await runFigures(options, PROFILES[options.profile], [
  ['agents', agents],
  ['peers_latency', peersLatency],
  ['peers_load', peersLoad],
], 15);
