// mcpd's Streamable HTTP endpoint (/mcp/NAME, docs/HTTP.md) used by real clients configured as
// their users configure them, with the bearer token `mcpctl http-token` prints:
//
// 1. 16 SDK clients (StreamableHTTPClientTransport, the token in requestInit.headers) on one
//    shared mcpd-demo-server. All send the same sequence, so their JSON-RPC ids and progress
//    tokens collide; every answer and progress notification must reach its own client only
//    (checked on the wire, below the SDK), one process serves them all, and DELETE
//    (terminateSession) ends their sessions. Their sampling calls, made while every session is
//    busy, may be declined (mcpd cannot know whose call it serves, docs/MULTIPLEXING.md) but
//    never reach another client.
// 2. 8 SDK clients sampling at once on the demo server with sharing = "serialized": each
//    sampling/createMessage reaches its caller's handler, and each caller gets its own text.
// 3. `claude mcp add --transport http --scope user NAME URL --header "Authorization: Bearer T"`,
//    then `claude mcp list`: Connected (and an entry with a wrong token not).
// 4. Gemini CLI with {"httpUrl": URL, "headers": {"Authorization": ...}} in settings.json,
//    then `gemini mcp list`: Connected (and an entry with a wrong token Disconnected).
// 5. The MCP Inspector's CLI (@modelcontextprotocol/inspector-cli, the first release with
//    --header; the inspector package's own pin, 0.15.0, has none and rewrites a URL whose path
//    does not end in /mcp): `--cli URL --transport http --header "Authorization: Bearer T"`
//    with --method tools/list and tools/call, and once from an mcp.json entry of type
//    streamable-http (--config FILE --server NAME). Without the header mcpd answers 401 and no
//    session attaches.
// 6. sharing = "project": two SDK clients declaring roots in two projects, on
//    server-filesystem: each is served by its own project's child and denied the other's file.
// 7. One SDK client keeps its session across mcpd restarts (SIGTERM, then SIGKILL) on a fixed
//    port and the same state directory: the same Client object calls again, without another
//    initialize, its capabilities (sampling) still hold, and its reopened GET stream carries
//    the tools/list_changed of a later `mcpctl restart`.
//
// Every part runs even when an earlier one failed; the failures are listed together at the end.
// Run as root through user-runtime-ns.sh: no network but loopback, whatever the CLIs try.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { scenario, log, check, fail, httpEndpoint, packageBin, resultText, waitFor, ScenarioError } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVER = 'demo';
const CLIENTS = 16;
const ECHOES = 10;
// The revisions mcpd serves over HTTP.
const HTTP_ERAS = ['2025-03-26', '2025-06-18', '2025-11-25'];
// The same demo server with sharing = "serialized": one session request at the child at a time,
// so a sampling request's caller is certain. An extra tool keeps its command line its own.
const SERIALIZED = 'demo-serialized';
const SERIALIZED_CLIENTS = 8;
// @modelcontextprotocol/server-filesystem with sharing = "project" (harness.mjs).
const PROJECTS = 'filesystem';
// What the demo's `sample` answers when mcpd declined the request.
const DECLINED = /^sampling declined by mcpd: /;

// The processes below mcpd running registry entry `name` (its exact command line).
function serverPids(ctx, name) {
  const { command, args } = ctx.definitions[name];
  const want = [command, ...args].join('\0');
  return ctx.daemonDescendants().filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '') === want;
    } catch {
      return false;
    }
  });
}

// A loopback port free now: bound by the kernel's choice, then let go.
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// An SDK client on `url` as its documentation has it: StreamableHTTPClientTransport with the
// token in requestInit.headers. What it sends and receives after initialize is kept (`sent`,
// `received`); its errors go to ctx.clientErrors with their time.
async function httpClient(ctx, url, token, label, { capabilities = {}, setup } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const record = { label, transport, sent: [], received: [] };
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    record.sent.push(message);
    return send(message, options);
  };
  const client = new Client({ name: label, version: '1.0.0' }, { capabilities });
  if (setup) setup(client);
  ctx.addClient(label, client, transport);
  client.onerror = (error) => {
    if (!ctx.closing && !record.closed) ctx.clientErrors.push({ client: label, error: String(error?.message ?? error), at: Date.now() });
  };
  record.client = client;
  try {
    await client.connect(transport, { timeout: 20000 });
  } catch (error) {
    fail(`${label}: initialize over HTTP at ${url} failed: ${error?.message ?? error}`);
  }
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    record.received.push(message);
    deliver(message, extra);
  };
  return record;
}

// DELETE ends each session (a refusal throws); the client is closed at once so that it does
// not reopen the GET stream mcpd ends, and what that stream's end makes it report is not kept.
async function endSessions(records) {
  await Promise.all(
    records.map(async (record) => {
      record.closed = true;
      await record.transport.terminateSession();
      await record.client.close();
    }),
  );
}

// A sampling handler that answers with its client's label and the prompt, and keeps the prompts.
function samplingSetup(label, prompts) {
  return (client) =>
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      const prompt = request.params.messages.map((m) => m.content?.text ?? '').join(' ');
      prompts.push(prompt);
      return { model: `model-of-${label}`, role: 'assistant', content: { type: 'text', text: `${label} sampled: ${prompt}` } };
    });
}

const isProgress = (m) => m.method === 'notifications/progress';
const isResponse = (m) => m.id !== undefined && m.method === undefined;

// The SDK takes a response at once and a notification a tick later: the last progress
// notification of a call, sent just before its answer, may come after the call is done, and
// the SDK reports it as for an "unknown token". Such an error is allowed when it is `run`'s own
// last notification.
function lateOwnProgress(error, run) {
  if (!run) return false;
  const match = /unknown token: (\{.*\})/s.exec(error.error);
  if (!match) return false;
  const { params } = JSON.parse(match[1]);
  return params?.progressToken === run.token && params?.progress === run.steps && params?.total === run.steps;
}

// Part 1: 16 clients, colliding ids and progress tokens, concurrent sampling.
async function manyClients(ctx, endpoint) {
  const url = endpoint.url(SERVER);
  const runs = Array.from({ length: CLIENTS }, (_, i) => ({ label: `http-${i}`, steps: 2 + i, prompts: [], progress: [] }));
  const records = await Promise.all(
    runs.map((run) => httpClient(ctx, url, endpoint.token, run.label, { capabilities: { sampling: {} }, setup: samplingSetup(run.label, run.prompts) })),
  );
  runs.forEach((run, i) => (run.record = records[i]));
  for (const { label, transport } of records) {
    check(HTTP_ERAS.includes(transport.protocolVersion), `${label}: negotiated ${transport.protocolVersion}, not one of ${HTTP_ERAS.join(', ')}`);
    check(/^m1\./.test(transport.sessionId ?? ''), `${label}: no Mcp-Session-Id of mcpd's form (m1.CLAIMS.SIGNATURE): ${transport.sessionId}`);
  }
  check(new Set(records.map((r) => r.transport.sessionId)).size === CLIENTS, 'two clients got the same Mcp-Session-Id');
  log(`${CLIENTS} SDK clients initialized over HTTP at ${url} (protocol ${records[0].transport.protocolVersion}), each its own session id`);

  const tools = (await records[0].client.listTools()).tools.map((t) => t.name);
  for (const tool of ['echo', 'slow', 'sample']) check(tools.includes(tool), `tools/list over HTTP lacks ${tool}: ${tools.join(', ')}`);
  for (const record of records.slice(1)) await record.client.listTools();
  for (const record of records) record.received.length = record.sent.length = 0;

  // Every client sends the same sequence, round by round across the clients, nothing awaited
  // until all are sent: a slow call with progress, the echoes, a sampling call.
  const pending = [];
  for (const run of runs) {
    run.echoes = [];
    run.prompt = `prompt of ${run.label} ${Math.random().toString(36).slice(2)}`;
  }
  for (let round = 0; round < ECHOES + 2; round++) {
    for (const run of runs) {
      const { client } = run.record;
      if (round === 0) {
        pending.push(
          client
            .callTool({ name: 'slow', arguments: { steps: run.steps, interval_ms: 25 } }, undefined, { onprogress: (p) => run.progress.push(p), timeout: 30000 })
            .then((result) => (run.slow = result)),
        );
      } else if (round <= ECHOES) {
        const text = `${run.label} echo ${round} ${Math.random().toString(36).slice(2)}`;
        pending.push(client.callTool({ name: 'echo', arguments: { text } }).then((result) => run.echoes.push({ text, result })));
      } else {
        pending.push(client.callTool({ name: 'sample', arguments: { prompt: run.prompt } }, undefined, { timeout: 30000 }).then((result) => (run.sample = result)));
      }
    }
  }
  await Promise.all(pending);

  // The ids and progress tokens really collided: the same ones in every client.
  for (const run of runs) {
    const requests = run.record.sent.filter((m) => m.method === 'tools/call');
    run.ids = requests.map((m) => m.id);
    run.token = requests[0].params?._meta?.progressToken;
    check(run.token !== undefined, `${run.label}: its slow call carried no progressToken`);
  }
  const ids = new Set(runs.map((r) => JSON.stringify(r.ids)));
  const tokens = new Set(runs.map((r) => JSON.stringify(r.token)));
  check(ids.size === 1 && tokens.size === 1, `the clients did not use the same request ids and progress token (ids ${[...ids].join(' | ')}; tokens ${[...tokens].join(' | ')}): the check would prove nothing`);
  log(`${pending.length} calls (each client: slow with progressToken ${runs[0].token}, ${ECHOES} echoes, sample) with ids ${runs[0].ids[0]}..${runs[0].ids.at(-1)} in every client`);

  for (const run of runs) {
    const { label } = run;
    check(resultText(run.slow) === `done after ${run.steps} steps`, `${label}: slow (${run.steps} steps) answered '${resultText(run.slow)}'`);
    for (const { text, result } of run.echoes) {
      check(!result.isError && resultText(result) === text, `${label}: echo of '${text}' came back as '${resultText(result)}'`);
    }
    // With every session busy, mcpd cannot know whose call a sampling request serves
    // (docs/MULTIPLEXING.md): it declines it, or routes it to the caller, never to another.
    const sampled = resultText(run.sample);
    run.routed = sampled === `${label} sampled: ${run.prompt}` && !run.sample.isError;
    check(run.routed || (run.sample.isError && DECLINED.test(sampled)), `${label}: sample answered '${sampled}', neither its own handler's answer nor mcpd's decline`);
    check(JSON.stringify(run.prompts) === JSON.stringify(run.routed ? [run.prompt] : []), `${label}: its sampling handler saw ${JSON.stringify(run.prompts)} (its call ${run.routed ? 'routed' : 'declined'})`);

    // On the wire: an answer for each of its requests, once; only its own progress.
    const responses = run.record.received.filter(isResponse).map((m) => JSON.stringify(m.id)).sort();
    const expected = run.ids.map((id) => JSON.stringify(id)).sort();
    check(JSON.stringify(responses) === JSON.stringify(expected), `${label}: received answers for ids ${responses.join(',')}, sent ${expected.join(',')}`);
    const progress = run.record.received.filter(isProgress).map((m) => m.params);
    const seen = progress.map((p) => `${p.progress}/${p.total}`).join(' ');
    const want = Array.from({ length: run.steps }, (_, k) => `${k + 1}/${run.steps}`).join(' ');
    check(seen === want && progress.every((p) => JSON.stringify(p.progressToken) === JSON.stringify(run.token)), `${label}: progress on the wire ${seen}, expected its own ${want}`);
    // The last one may reach the SDK after the result (lateOwnProgress).
    const delivered = run.progress.map((p) => `${p.progress}/${p.total}`).join(' ');
    const wantButLast = want.split(' ').slice(0, -1).join(' ');
    check(delivered === want || delivered === wantButLast, `${label}: onprogress saw ${delivered}, expected ${want}`);
    const requests = run.record.received.filter((m) => m.method && m.id !== undefined);
    check(requests.length === (run.routed ? 1 : 0) && requests.every((m) => m.method === 'sampling/createMessage'), `${label}: server requests received: ${JSON.stringify(requests.map((m) => m.method))}`);
    const others = run.record.received.filter((m) => !isResponse(m) && !isProgress(m) && !(m.method && m.id !== undefined));
    check(others.length === 0, `${label}: received more than its answers, progress and sampling request: ${JSON.stringify(others).slice(0, 300)}`);
  }
  const unexpected = ctx.takeClientErrors((e) => lateOwnProgress(e, runs.find((r) => r.label === e.client)));
  check(unexpected.length === 0, `client-side errors:\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  const routed = runs.filter((r) => r.routed).length;
  log(`every client got its own ${ECHOES} echoes, its own slow result with exactly its progress (2..17 steps), nothing of the others on its wire; sampling with all busy: ${routed} routed to their caller, ${CLIENTS - routed} declined, none to another client`);

  const pids = serverPids(ctx, SERVER);
  check(pids.length === 1, `expected one ${SERVER} process for ${CLIENTS} HTTP clients, found ${pids.length} (${pids.join(', ')})`);
  const listed = ctx.mcpctlJson(['sessions', SERVER]).sessions ?? [];
  const mine = listed.filter((s) => /^http-\d+$/.test(s.client?.name ?? ''));
  check(mine.length === CLIENTS && mine.every((s) => s.transport === 'http'), `mcpctl sessions ${SERVER} does not list the ${CLIENTS} clients with transport http: ${JSON.stringify(listed)}`);
  log(`one ${SERVER} process (pid ${pids[0]}); mcpctl sessions lists the ${CLIENTS} with transport http`);

  await endSessions(records);
  await waitFor(() => !(ctx.mcpctlJson(['sessions', SERVER]).sessions ?? []).some((s) => /^http-\d+$/.test(s.client?.name ?? '')), 5000, 'the sessions ended by DELETE to leave mcpctl sessions');
  log(`DELETE (terminateSession) ended all ${CLIENTS} sessions`);
}

// Part 2: several clients sampling at once on a serialized server, each answered by its own handler.
async function concurrentSampling(ctx, endpoint) {
  const url = endpoint.url(SERIALIZED);
  const runs = Array.from({ length: SERIALIZED_CLIENTS }, (_, i) => ({ label: `http-sampling-${i}`, prompts: [] }));
  const records = await Promise.all(
    runs.map((run) => httpClient(ctx, url, endpoint.token, run.label, { capabilities: { sampling: {} }, setup: samplingSetup(run.label, run.prompts) })),
  );
  runs.forEach((run, i) => (run.record = records[i]));
  // Each client: a sampling call between two echoes, all clients' calls sent before any answer.
  const pending = [];
  for (let round = 0; round < 3; round++) {
    for (const run of runs) {
      const { client } = run.record;
      if (round === 1) {
        run.prompt = `prompt of ${run.label} ${Math.random().toString(36).slice(2)}`;
        pending.push(client.callTool({ name: 'sample', arguments: { prompt: run.prompt } }, undefined, { timeout: 30000 }).then((result) => (run.sample = result)));
      } else {
        const text = `${run.label} echo ${round}`;
        pending.push(client.callTool({ name: 'echo', arguments: { text } }).then((result) => check(resultText(result) === text, `${run.label}: echo of '${text}' came back as '${resultText(result)}'`)));
      }
    }
  }
  await Promise.all(pending);
  const samples = new Set(runs.map((run) => JSON.stringify(run.record.sent.find((m) => m.params?.name === 'sample')?.id)));
  check(samples.size === 1, `the clients' sampling calls did not share one request id: ${[...samples].join(', ')}`);
  for (const run of runs) {
    check(resultText(run.sample) === `${run.label} sampled: ${run.prompt}` && !run.sample.isError, `${run.label}: sample on the serialized server answered '${resultText(run.sample)}', not its own handler's answer to its prompt`);
    check(JSON.stringify(run.prompts) === JSON.stringify([run.prompt]), `${run.label}: its sampling handler saw ${JSON.stringify(run.prompts)}, not just its own prompt`);
  }
  const unexpected = ctx.takeClientErrors();
  check(unexpected.length === 0, `client-side errors:\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  const pids = serverPids(ctx, SERIALIZED);
  check(pids.length === 1, `expected one ${SERIALIZED} process for ${SERIALIZED_CLIENTS} HTTP clients, found ${pids.length}`);
  log(`${SERIALIZED_CLIENTS} clients sampled at once on ${SERIALIZED} (one process, request id ${[...samples][0]} in each): every sampling request reached its caller's handler, every caller got its own text`);
  await endSessions(records);
}

// Parses one listing line per entry name from an agent's `mcp list` output.
function listLine(output, name) {
  const lines = output.split('\n').map((l) => l.trim()).filter((l) => l.includes(`${name}: `));
  check(lines.length === 1, `${lines.length} lines for ${name} in:\n${output.trim()}`);
  return lines[0];
}

// Part 3: Claude Code.
async function claudeCode(ctx, endpoint, home, project) {
  const claudeDir = path.join(HERE, 'node_modules', '@anthropic-ai', 'claude-code');
  const version = packageBin('@anthropic-ai/claude-code', 'claude').version;
  // npm ci --ignore-scripts leaves bin/claude.exe a stub; the package's launcher runs the binary.
  const claude = path.join(claudeDir, 'cli-wrapper.cjs');
  check(fs.existsSync(claude), `${claude} is missing: Claude Code ${version} has no launcher for an install without scripts`);
  log(`Claude Code ${version}`);
  const env = {
    ...process.env,
    HOME: home,
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    NO_COLOR: '1',
  };
  const url = endpoint.url(SERVER);
  const entries = { 'demo-http': endpoint.token, 'demo-http-wrong-token': 'not-the-token' };
  for (const [name, token] of Object.entries(entries)) {
    const args = [claude, 'mcp', 'add', '--transport', 'http', '--scope', 'user', name, url, '--header', `Authorization: Bearer ${token}`];
    const added = await ctx.run(`claude mcp add ${name}`, process.execPath, args, { env, cwd: project, timeoutMs: 30000 });
    check(added.status === 0, `claude mcp add --transport http ${name} exited with ${added.status ?? added.signal}: ${added.stderr}${added.stdout}`);
  }
  const config = JSON.parse(fs.readFileSync(path.join(home, '.claude.json'), 'utf8'));
  for (const [name, token] of Object.entries(entries)) {
    const entry = config.mcpServers?.[name];
    check(entry?.type === 'http' && entry.url === url && entry.headers?.Authorization === `Bearer ${token}`, `~/.claude.json has ${name} as ${JSON.stringify(entry)}`);
  }
  log(`claude mcp add --transport http --scope user: ${JSON.stringify(config.mcpServers['demo-http']).replace(endpoint.token, 'TOKEN')}`);

  const before = ctx.attachedSessions();
  const list = await ctx.run('claude mcp list', process.execPath, [claude, 'mcp', 'list'], { env, cwd: project, timeoutMs: 60000 });
  check(list.status === 0, `claude mcp list exited with ${list.status ?? list.signal}: ${list.stderr}`);
  const good = listLine(list.stdout, 'demo-http');
  // ✔ (or ✓, by terminal and version) Connected.
  check(good === `demo-http: ${url} (HTTP) - ✔ Connected` || good === `demo-http: ${url} (HTTP) - ✓ Connected`, `claude mcp list reports the HTTP entry as '${good}'`);
  const bad = listLine(list.stdout, 'demo-http-wrong-token');
  check(bad.startsWith(`demo-http-wrong-token: ${url} (HTTP) - `) && !/Connected\s*$/.test(bad), `claude mcp list reports the entry with a wrong token as '${bad}'`);
  check(ctx.attachedSessions() > before, 'claude mcp list reported Connected, but no session attached to mcpd');
  log(`claude mcp list: '${good}'; with a wrong token: '${bad}'`);
}

// Part 4: Gemini CLI.
async function geminiCli(ctx, endpoint, home, project) {
  const gemini = packageBin('@google/gemini-cli', 'gemini');
  log(`Gemini CLI ${gemini.version}`);
  const url = endpoint.url(SERVER);
  const settings = {
    mcpServers: {
      'demo-http': { httpUrl: url, headers: { Authorization: `Bearer ${endpoint.token}` } },
      'demo-http-wrong-token': { httpUrl: url, headers: { Authorization: 'Bearer not-the-token' } },
    },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
  // `mcp list` tests servers only in a trusted folder.
  fs.writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }, null, 2));
  const env = { ...process.env, HOME: home, GEMINI_TELEMETRY_ENABLED: 'false', NO_COLOR: '1' };
  const before = ctx.attachedSessions();
  const run = await ctx.run('gemini mcp list', process.execPath, [gemini.script, 'mcp', 'list'], { env, cwd: project, timeoutMs: 60000 });
  check(run.status === 0, `gemini mcp list exited with ${run.status ?? run.signal}`);
  const output = `${run.stdout}\n${run.stderr}`;
  const good = listLine(output, 'demo-http');
  check(good === `✓ demo-http: ${url} (http) - Connected`, `gemini mcp list reports the httpUrl entry as '${good}'`);
  const bad = listLine(output, 'demo-http-wrong-token');
  check(bad === `✗ demo-http-wrong-token: ${url} (http) - Disconnected`, `gemini mcp list reports the entry with a wrong token as '${bad}'`);
  check(ctx.attachedSessions() > before, 'gemini mcp list reported Connected, but no session attached to mcpd');
  log(`gemini mcp list: '${good}'; with a wrong token: '${bad}'`);
}

// Part 5: the MCP Inspector's CLI.
async function inspectorCli(ctx, endpoint) {
  const inspector = packageBin('@modelcontextprotocol/inspector-cli', 'mcp-inspector-cli');
  log(`MCP Inspector CLI ${inspector.version}`);
  const url = endpoint.url(SERVER);
  const header = `Authorization: Bearer ${endpoint.token}`;
  const inspect = (label, args) =>
    ctx.run(`inspector ${label}`, process.execPath, [inspector.script, '--cli', ...args], { timeoutMs: 30000 });
  const parse = (label, run) => {
    check(run.status === 0, `inspector ${label}: exited with ${run.status ?? run.signal}: ${(run.stderr || run.stdout).trim().slice(-500)}`);
    try {
      return JSON.parse(run.stdout);
    } catch {
      fail(`inspector ${label}: printed no JSON: ${run.stdout.slice(0, 500)}`);
    }
  };

  const list = parse('tools/list', await inspect('tools/list', [url, '--transport', 'http', '--header', header, '--method', 'tools/list']));
  const tools = list.tools?.map((t) => t.name) ?? [];
  for (const tool of ['echo', 'add', 'slow', 'sample']) check(tools.includes(tool), `inspector tools/list over HTTP lacks ${tool}: ${tools.join(', ')}`);
  log(`inspector --cli ${url} --transport http --header ... --method tools/list: ${tools.join(', ')}`);
  const call = parse('tools/call echo', await inspect('tools/call echo',
    [url, '--transport', 'http', '--header', header, '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hi']));
  check(call.content?.[0]?.text === 'hi' && !call.isError, `inspector tools/call echo text=hi answered ${JSON.stringify(call)}`);
  log(`inspector tools/call echo text=hi: '${call.content?.[0]?.text}'`);

  // As a user keeps it: an mcp.json entry of type streamable-http, chosen with --server.
  const config = path.join(ctx.tmp, 'inspector-mcp.json');
  fs.writeFileSync(config, JSON.stringify({ mcpServers: { other: { type: 'stdio', command: 'false' }, demo: { type: 'streamable-http', url } } }));
  const fromConfig = parse('--config tools/list', await inspect('--config tools/list', ['--config', config, '--server', 'demo', '--header', header, '--method', 'tools/list']));
  check((fromConfig.tools ?? []).some((t) => t.name === 'echo'), `inspector --config --server demo: tools/list lacks echo: ${JSON.stringify(fromConfig).slice(0, 300)}`);
  log(`inspector --cli --config mcp.json --server demo --method tools/list: ${(fromConfig.tools ?? []).length} tools`);

  // Without the token: mcpd's 401, and no session.
  const before = ctx.attachedSessions();
  const refused = await inspect('tools/list without the token', [url, '--transport', 'http', '--method', 'tools/list']);
  const said = (refused.stderr || refused.stdout).trim();
  check(refused.status !== 0 && /401|Bearer/.test(said), `inspector without the token: expected mcpd's 401, got exit ${refused.status}: ${said.slice(-400)}`);
  check(ctx.attachedSessions() === before, 'a session attached for the inspector, which sent no token');
  log(`inspector without --header: refused (${said.split('\n').find((l) => /401|Bearer/.test(l))?.trim().slice(0, 160)})`);
}

// Part 6: sharing = "project" over HTTP. Two SDK clients, each declaring roots with its own
// project directory, on @modelcontextprotocol/server-filesystem: each ends up on its project's
// child (an HTTP session has no working directory, so it moves there once its roots are known)
// and is denied the other project's file.
async function projectsOverHttp(ctx, endpoint) {
  const projects = {};
  for (const name of ['alpha', 'beta']) {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(ctx.tmp, `http-${name}-`)));
    fs.writeFileSync(path.join(dir, 'README.txt'), `project ${name} over HTTP\n`);
    projects[name] = dir;
  }
  const url = endpoint.url(PROJECTS);
  const records = await Promise.all(Object.entries(projects).map(([name, dir]) =>
    httpClient(ctx, url, endpoint.token, `http-${name}`, {
      capabilities: { roots: { listChanged: true } },
      setup: (c) => c.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: `file://${dir}`, name }] })),
    })));
  try {
    for (const [i, name] of Object.keys(projects).entries()) {
      const { client } = records[i];
      const own = projects[name];
      const other = projects[name === 'alpha' ? 'beta' : 'alpha'];
      let allowed = '';
      await waitFor(async () => {
        allowed = resultText(await client.callTool({ name: 'list_allowed_directories', arguments: {} }));
        return allowed.includes(own);
      }, 15000, `${name} over HTTP to be served by its project's child (list_allowed_directories naming ${own})`);
      check(!allowed.includes(other), `${name} over HTTP: list_allowed_directories names the other project: ${allowed}`);
      const mine = await client.callTool({ name: 'read_text_file', arguments: { path: path.join(own, 'README.txt') } });
      check(!mine.isError && resultText(mine).includes(`project ${name} over HTTP`), `${name} over HTTP: reading its own file gave ${JSON.stringify(mine)}`);
      const foreign = await client.callTool({ name: 'read_text_file', arguments: { path: path.join(other, 'README.txt') } });
      check(foreign.isError === true && /denied|outside|not allowed/i.test(resultText(foreign)),
        `${name} over HTTP: reading the other project's file was not denied: ${JSON.stringify(foreign)}`);
    }
    log('sharing = "project" over HTTP: each client on its own project\'s child, denied the other\'s file');
  } finally {
    await endSessions(records);
  }
}

// Part 7: one SDK client across two restarts of mcpd on a fixed port.
async function acrossRestarts(ctx, firstToken) {
  const port = await freePort();
  ctx.options.daemonToml = `http_listen = ["127.0.0.1:${port}"]`;
  await ctx.restartDaemon();
  const endpoint = httpEndpoint(ctx);
  check(endpoint.address === `127.0.0.1:${port}`, `http_listen 127.0.0.1:${port}, but mcpctl http-token lists ${endpoint.address}`);
  check(endpoint.token === firstToken, 'the token changed when mcpd restarted on the same state directory');
  const prompts = [];
  const label = 'http-restarts';
  const record = await httpClient(ctx, endpoint.url(SERVER), endpoint.token, label, { capabilities: { sampling: {} }, setup: samplingSetup(label, prompts) });
  const { client, transport } = record;
  const sessionId = transport.sessionId;
  log(`${label} initialized on the fixed port ${port}`);

  // echo, slow with progress and sample: all must work on the session as it stands.
  const exercise = async (when) => {
    const t0 = Date.now();
    const text = `${when} ${Math.random().toString(36).slice(2)}`;
    const echo = await client.callTool({ name: 'echo', arguments: { text } }, undefined, { timeout: 20000 });
    check(resultText(echo) === text, `${when}: echo answered '${resultText(echo)}', sent '${text}'`);
    const progress = [];
    const slow = await client.callTool({ name: 'slow', arguments: { steps: 3, interval_ms: 20 } }, undefined, { onprogress: (p) => progress.push(`${p.progress}/${p.total}`), timeout: 20000 });
    check(resultText(slow) === 'done after 3 steps', `${when}: slow answered '${resultText(slow)}'`);
    check(['1/3 2/3 3/3', '1/3 2/3'].includes(progress.join(' ')), `${when}: slow's progress was ${progress.join(' ')}`);
    const prompt = `${when} prompt`;
    const sample = await client.callTool({ name: 'sample', arguments: { prompt } }, undefined, { timeout: 20000 });
    check(resultText(sample) === `${label} sampled: ${prompt}`, `${when}: sample answered '${resultText(sample)}' (the session's sampling capability lost?)`);
    check(transport.sessionId === sessionId, `${when}: the session id changed`);
    return Date.now() - t0;
  };
  await exercise('before the restarts');
  // The one initialize connect() sent, and no other.
  const initializes = () => record.sent.filter((m) => m.method === 'initialize').length - 1;

  for (const how of ['SIGTERM', 'SIGKILL']) {
    const logStart = fs.statSync(ctx.daemonLog).size;
    const oldPids = [...serverPids(ctx, SERVER), ...serverPids(ctx, SERIALIZED)];
    if (how === 'SIGTERM') {
      await ctx.restartDaemon();
    } else {
      ctx.daemon.kill('SIGKILL');
      await ctx.daemonExit;
      log(`mcpd killed (pid ${ctx.daemon.pid})`);
      await ctx.startDaemon();
    }
    const upAt = Date.now();
    const took = await exercise(`after ${how}`);
    check(initializes() === 0, `after ${how}: the client sent initialize again`);
    const newLog = fs.readFileSync(ctx.daemonLog).subarray(logStart).toString('utf8');
    check(/session \d+ rebuilt from its HTTP session id/.test(newLog), `after ${how}: mcpd's log does not tell of the session rebuilt from its id`);
    // Errors of the stream the client keeps open (GET) while mcpd was away are expected; none after.
    const unexpected = ctx.takeClientErrors((e) => e.client === label && e.at <= upAt && /SSE stream disconnected|Failed to reconnect SSE stream|Failed to open SSE stream|fetch failed/.test(e.error));
    check(unexpected.length === 0, `after ${how}: client-side errors:\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
    if (how === 'SIGKILL') {
      // mcpd's keeper ends the server processes of an mcpd that was killed.
      await waitFor(() => oldPids.every((pid) => !fs.existsSync(`/proc/${pid}`)), 5000, `the killed mcpd's server processes (${oldPids.join(', ')}) to end`);
    }
    log(`after ${how} and a new mcpd: the same Client (session id kept, no initialize) called echo, slow with progress and sample (${took} ms)`);
  }
  // The SDK reopens its GET stream 1 s, then 2.5 s after losing it: past that, nothing more
  // may have gone wrong, and what the server sends on its own must arrive on that stream.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const late = ctx.takeClientErrors();
  check(late.length === 0, `after the restarts: client-side errors:\n${late.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  const seen = record.received.length;
  ctx.runMcpctl(['restart', SERVER]);
  const changed = () => record.received.slice(seen).some((m) => m.method === 'notifications/tools/list_changed');
  await waitFor(changed, 10000, `notifications/tools/list_changed on the GET stream after mcpctl restart ${SERVER}`);
  log(`mcpctl restart ${SERVER}: tools/list_changed reached the client on its reopened GET stream`);
}

await scenario('MCP over Streamable HTTP: SDK clients, Claude Code, Gemini CLI and the inspector', {
  servers: [{ name: SERVER, demo: ['--tick-ms=0'] }, { name: SERIALIZED, demo: ['--tick-ms=0', '--extra-tool=serialized'] }, PROJECTS],
  serverSettings: { [SERIALIZED]: { sharing: '"serialized"' } },
  daemonToml: 'http_listen = ["127.0.0.1:0"]',
  userRuntimeDir: true,
  timeoutSeconds: 200,
}, async (ctx) => {
  await ctx.waitRunning(SERVER);
  await ctx.waitRunning(SERIALIZED);
  const endpoint = httpEndpoint(ctx);
  log(`mcpctl http-token: ${endpoint.address}, a token of ${endpoint.token.length} characters`);
  const home = path.join(ctx.tmp, 'home');
  const project = path.join(ctx.tmp, 'project');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(project, { recursive: true });

  const failures = [];
  const part = async (name, body) => {
    log(`--- ${name}`);
    try {
      await body();
    } catch (error) {
      const message = error instanceof ScenarioError ? error.message : (error?.stack ?? String(error));
      failures.push(`${name}: ${message}`);
      log(`FAILED: ${name}: ${message}`);
      ctx.takeClientErrors();
    }
  };
  await part(`${CLIENTS} SDK clients`, () => manyClients(ctx, endpoint));
  await part(`${SERIALIZED_CLIENTS} SDK clients sampling at once`, () => concurrentSampling(ctx, endpoint));
  await part('Claude Code', () => claudeCode(ctx, endpoint, home, project));
  await part('Gemini CLI', () => geminiCli(ctx, endpoint, home, project));
  await part('MCP Inspector CLI', () => inspectorCli(ctx, endpoint));
  await part('sharing = "project" over HTTP', () => projectsOverHttp(ctx, endpoint));
  await part('a session across mcpd restarts', () => acrossRestarts(ctx, endpoint.token));
  if (failures.length > 0) fail(`${failures.length} part(s) failed:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
});
