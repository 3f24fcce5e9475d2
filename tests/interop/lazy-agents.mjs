// Lazy servers as a user meets them: ten registry entries with `lazy = true` (four
// server-everything, three server-memory, three of this build's mcpd-demo-server), their caches
// filled once by `mcpctl warm`, then a fresh mcpd that has only the cache files to go on. Claude
// Code and Gemini CLI, each with the ten as {"command": "mcpctl", "args": ["connect", NAME]},
// must report every one connected by `mcp list` without a single server process starting; the
// MCP Inspector's CLI then lists one server's tools (still no start) and calls its `echo`,
// which starts that server, and only it, once.
//
// Starts are counted three ways, and all three must agree: mcpd's log ("[NAME] stopped ->
// starting", one line per process it starts), /proc watched every 20 ms for descendants of
// mcpd (but its keeper) and the MCPD_PROCESS_TAG each server process gets, and
// `mcpctl --json status` (state, pid, restarts, last_exit: a process that ran and stopped
// again since mcpd started leaves a last_exit). The scenario prints the count after the
// agents (0) and after the inspector's call (1).
//
// Run as root through user-runtime-ns.sh: no network but loopback, whatever the CLIs try.
// Claude Code's update checks, telemetry and error reports are switched off with its
// documented variables, Gemini CLI's as in gemini-mcp-list.mjs; `mcp list` needs no login
// for either.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { scenario, log, check, fail, packageBin, waitFor } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const SERVERS = [
  ...[1, 2, 3, 4].map((i) => ({ name: `everything-${i}`, server: 'everything' })),
  ...[1, 2, 3].map((i) => ({ name: `memory-${i}`, server: 'memory' })),
  // Each with a tool of its own, so that no two demo entries share a command line.
  ...[1, 2, 3].map((i) => ({ name: `demo-${i}`, demo: ['--tick-ms=0', `--extra-tool=demo_${i}`] })),
];
const NAMES = SERVERS.map((s) => s.name);
// The one the inspector calls.
const CALLED = 'everything-2';

// idle_timeout short, so that the warmed servers are asleep again soon; request_log, so that
// mcpd's log names each request that did reach a process (what woke a server, should one wake).
const serverSettings = Object.fromEntries(NAMES.map((name) => [name, { lazy: 'true', idle_timeout: '"2s"', request_log: 'true' }]));

function statusByName(ctx) {
  const status = ctx.mcpctlJson(['status']);
  const list = Array.isArray(status) ? status : (status.servers ?? []);
  return Object.fromEntries(list.map((s) => [s.name, s]));
}

// Asleep with a cache: no process, a cache written at some time.
const sleeping = (s) => s?.state === 'stopped' && s.pid === null && Number.isInteger(s.lazy?.cached);

// The processes below mcpd that run servers: every descendant but its keeper (a process mcpd
// forks at start-up to clean up after it, docs/ARCHITECTURE.md), with the MCPD_PROCESS_TAG
// (<mcpd's pid>.<serial>) mcpd gives each server process it spawns. pid -> { tag, cmdline }.
const NO_TAG = '(no MCPD_PROCESS_TAG)';
function serverProcesses(ctx) {
  const found = new Map();
  for (const pid of ctx.daemonDescendants()) {
    let comm = '';
    let cmdline = '';
    let environ = '';
    try {
      comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue; // gone already
    }
    if (comm === 'mcpd-keeper') continue;
    const tag = environ.split('\0').find((v) => v.startsWith('MCPD_PROCESS_TAG='))?.slice('MCPD_PROCESS_TAG='.length) ?? NO_TAG;
    found.set(pid, { tag, cmdline });
  }
  return found;
}

// Every server process below mcpd the scenario has seen, polled from /proc every 20 ms: a
// server process lives for at least its idle_timeout (2 s), so none is missed.
class ProcessWatch {
  constructor(ctx) {
    this.ctx = ctx;
    this.seen = new Map();
    this.timer = setInterval(() => this.poll(), 20);
    this.timer.unref();
    this.poll();
  }

  poll() {
    // A process seen between mcpd's fork and its exec has no tag yet: looked at again.
    for (const [pid, found] of serverProcesses(this.ctx)) {
      const known = this.seen.get(pid);
      if (!known || known.tag === NO_TAG) this.seen.set(pid, found);
    }
  }

  // Server processes started, one per tag (a server's helpers share its tag).
  starts() {
    return new Set([...this.seen.values()].map((p) => p.tag)).size;
  }

  stop() {
    clearInterval(this.timer);
    this.poll();
  }
}

// Lines of mcpd's log that tell of a server process starting, per server, from `offset` on.
function logStarts(ctx, offset) {
  const text = fs.readFileSync(ctx.daemonLog).subarray(offset).toString('utf8');
  const starts = {};
  for (const line of text.split('\n')) {
    if (!/ -> starting\b/.test(line)) continue;
    const name = NAMES.find((n) => line.includes(`[${n}]`)) ?? `(unknown: ${line.trim()})`;
    starts[name] = (starts[name] ?? 0) + 1;
  }
  return starts;
}

// `mcpctl status` as a user reads it: each of the ten "sleeping (cached DATE TIME)".
function checkSleepingText(ctx, when) {
  const text = ctx.runMcpctl(['status']);
  for (const name of NAMES) {
    check(text.split('\n').some((l) => l.startsWith(`${name} `) && l.includes('sleeping (cached ')), `${when}: mcpctl status does not show ${name} sleeping (cached ...):\n${text}`);
  }
}

const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);
const describe = (counts) => (total(counts) === 0 ? 'none' : Object.entries(counts).map(([n, c]) => `${n} ${c}x`).join(', '));

await scenario('lazy servers: Claude Code and Gemini CLI list ten from the cache, the inspector starts one', { servers: SERVERS, serverSettings, userRuntimeDir: true, timeoutSeconds: 150 }, async (ctx) => {
  ctx.checkDefaultSocket();
  // --- The fill phase: the servers are cold, `mcpctl warm` reads their lists into the cache.
  const cold = statusByName(ctx);
  for (const name of NAMES) {
    const s = cold[name];
    check(s?.state === 'stopped' && s.pid === null && s.lazy && s.lazy.cached === null, `${name} is not cold after mcpd started: ${JSON.stringify(s)}`);
  }
  check(serverProcesses(ctx).size === 0, `mcpd started processes for lazy servers before any request: ${[...serverProcesses(ctx).keys()].join(', ')}`);
  log('ten lazy servers, all cold, no process');

  const warm = await ctx.run('mcpctl warm', 'mcpctl', ['warm', ...NAMES, '--timeout', '60s'], { timeoutMs: 90000 });
  check(warm.status === 0, `mcpctl warm exited with ${warm.status ?? warm.signal}: ${warm.stderr}${warm.stdout}`);
  // warm answers once the last server runs, with each one's state then: a server that was
  // ready sooner may have been idle for its 2 s already and be asleep again, with its cache.
  const ran = fs.readFileSync(ctx.daemonLog, 'utf8');
  for (const name of NAMES) {
    const lines = warm.stdout.split('\n').filter((l) => l.startsWith(`${name}: `));
    check(lines.length === 1 && /^\S+: (running \(pid \d+\)|sleeping \(cached \d{4}-\d\d-\d\d \d\d:\d\d\))$/.test(lines[0]), `mcpctl warm reported ${name} as ${JSON.stringify(lines)}:\n${warm.stdout}`);
    check(ran.includes(`[${name}] starting -> running`), `${name} did not reach running when warmed (mcpd's log has no '[${name}] starting -> running')`);
  }
  log(`mcpctl warm: all ten ran (${warm.stdout.trim().split('\n').join('; ')})`);
  await waitFor(() => {
    const status = statusByName(ctx);
    return NAMES.every((name) => sleeping(status[name]));
  }, 30000, 'every warmed server to stop again with its cache (idle_timeout 2s)');
  await waitFor(() => serverProcesses(ctx).size === 0, 5000, 'the warmed servers\' processes to be gone');
  checkSleepingText(ctx, 'after mcpctl warm');
  const cacheDir = path.join(ctx.stateDir, 'cache');
  const cacheFiles = fs.existsSync(cacheDir) ? fs.readdirSync(cacheDir) : [];
  // One cache file per registry entry, the four that run the same server-everything included.
  check(cacheFiles.length === NAMES.length, `expected a cache file per server in ${cacheDir}, found ${cacheFiles.length}`);
  log(`all ten asleep with their caches (${cacheFiles.length} files in ${cacheDir})`);

  // --- A fresh mcpd: what it knows of the servers comes from the cache files.
  await ctx.restartDaemon();
  const watch = new ProcessWatch(ctx);
  ctx.checkDefaultSocket();
  const fresh = statusByName(ctx);
  for (const name of NAMES) {
    check(sleeping(fresh[name]), `${name} is not sleeping with a cache after mcpd restarted: ${JSON.stringify(fresh[name])}`);
  }
  log('the new mcpd has all ten asleep, from the cache files');

  // Every way of counting a start must say none, for each server.
  const checkStarts = (when, expected) => {
    watch.poll();
    const fromLog = logStarts(ctx, ctx.daemonLogStart);
    const status = statusByName(ctx);
    for (const name of NAMES) {
      const want = expected[name] ?? 0;
      check((fromLog[name] ?? 0) === want, `${when}: mcpd's log shows ${fromLog[name] ?? 0} start(s) of ${name}, expected ${want}`);
      const s = status[name];
      check(s?.restarts === 0, `${when}: ${name} has restarts ${s?.restarts}`);
      if (want === 0) {
        check(s?.state === 'stopped' && s.pid === null && s.last_exit === null,
          `${when}: ${name} was started (state ${s?.state}, pid ${s?.pid}, last_exit ${JSON.stringify(s?.last_exit)})`);
      } else {
        check(s?.pid !== null || s?.last_exit !== null, `${when}: ${name} shows no process, running or exited: ${JSON.stringify(s)}`);
      }
    }
    const unknown = Object.keys(fromLog).filter((n) => !NAMES.includes(n));
    check(unknown.length === 0, `${when}: mcpd's log has starts of no known server: ${unknown.join('; ')}`);
    const processes = [...watch.seen.entries()];
    const expectedCount = total(expected);
    check(processes.length === expectedCount && watch.starts() === expectedCount,
      `${when}: ${processes.length} server process(es) ran below mcpd, expected ${expectedCount}:\n${processes.map(([pid, p]) => `  ${pid} ${p.tag} ${p.cmdline}`).join('\n')}`);
    for (const [pid, p] of processes) {
      check(p.tag.startsWith(`${ctx.daemon.pid}.`), `${when}: process ${pid} below mcpd has MCPD_PROCESS_TAG ${p.tag}, not one of mcpd ${ctx.daemon.pid}'s`);
    }
    check(total(fromLog) === expectedCount, `${when}: mcpd's log shows ${describe(fromLog)} (${total(fromLog)} starts), expected ${expectedCount}`);
    return { fromLog, processes, status };
  };
  const restarted = checkStarts('after the restart', {});
  // What each server answered from its cache so far, and what an agent added to that.
  const answered = (status) => Object.fromEntries(NAMES.map((name) => [name, status[name]?.lazy?.answered_from_cache]));
  const answeredBy = (before, after) => {
    const added = NAMES.map((name) => after[name] - before[name]);
    return new Set(added).size === 1 ? `${added[0]} each` : NAMES.map((name, i) => `${name} ${added[i]}`).join(', ');
  };
  const atRestart = answered(restarted.status);
  check(NAMES.every((name) => atRestart[name] === 0), `a fresh mcpd has answered from the cache already: ${JSON.stringify(atRestart)}`);

  // --- Claude Code: `claude mcp add --scope user NAME -- mcpctl connect NAME`, then `claude mcp list`.
  const claudeDir = path.join(HERE, 'node_modules', '@anthropic-ai', 'claude-code');
  const claudeVersion = packageBin('@anthropic-ai/claude-code', 'claude').version;
  // npm ci --ignore-scripts leaves bin/claude.exe a stub (the postinstall copies the platform
  // package's native binary over it); the package's own launcher for that case runs the binary.
  const claude = path.join(claudeDir, 'cli-wrapper.cjs');
  check(fs.existsSync(claude), `${claude} is missing: Claude Code ${claudeVersion} has no launcher for an install without scripts`);
  log(`Claude Code ${claudeVersion} (${claude})`);
  const home = path.join(ctx.tmp, 'home');
  const project = path.join(ctx.tmp, 'project');
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  fs.mkdirSync(project);
  const claudeEnv = {
    ...process.env,
    HOME: home,
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    NO_COLOR: '1',
  };
  for (const name of NAMES) {
    const added = await ctx.run(`claude mcp add ${name}`, process.execPath, [claude, 'mcp', 'add', '--scope', 'user', name, '--', 'mcpctl', 'connect', name], { env: claudeEnv, cwd: project, timeoutMs: 30000 });
    check(added.status === 0, `claude mcp add ${name} exited with ${added.status ?? added.signal}: ${added.stderr}${added.stdout}`);
  }
  const claudeConfig = JSON.parse(fs.readFileSync(path.join(home, '.claude.json'), 'utf8'));
  for (const name of NAMES) {
    const entry = claudeConfig.mcpServers?.[name];
    check(entry?.command === 'mcpctl' && JSON.stringify(entry.args) === JSON.stringify(['connect', name]),
      `~/.claude.json has ${name} as ${JSON.stringify(entry)}, not mcpctl connect ${name}`);
  }
  log(`claude mcp add --scope user: ten mcpctl connect entries in ~/.claude.json`);

  const sessionsBefore = ctx.attachedSessions();
  const claudeList = await ctx.run('claude mcp list', process.execPath, [claude, 'mcp', 'list'], { env: claudeEnv, cwd: project, timeoutMs: 60000 });
  check(claudeList.status === 0, `claude mcp list exited with ${claudeList.status ?? claudeList.signal}: ${claudeList.stderr}`);
  {
    const lines = claudeList.stdout.split('\n').map((l) => l.trimEnd()).filter((l) => /^\S+: /.test(l));
    for (const name of NAMES) {
      const line = lines.find((l) => l.startsWith(`${name}: `));
      // ✔ (or ✓, by terminal and version) Connected; ✘ Failed to connect otherwise.
      check(line === `${name}: mcpctl connect ${name} - ✔ Connected` || line === `${name}: mcpctl connect ${name} - ✓ Connected`,
        `claude mcp list reports ${name} as '${line}':\n${claudeList.stdout.trim()}`);
    }
    const others = lines.filter((l) => !NAMES.some((name) => l.startsWith(`${name}: `)));
    check(others.length === 0, `claude mcp list shows servers not configured: ${others.join('; ')}`);
  }
  const claudeSessions = ctx.attachedSessions() - sessionsBefore;
  check(claudeSessions >= NAMES.length, `claude mcp list reported ten connected, but only ${claudeSessions} sessions attached to this mcpd`);
  const afterClaude = answered(checkStarts('after claude mcp list', {}).status);
  for (const name of NAMES) {
    check(afterClaude[name] >= 1, `${name} answered nothing from its cache to claude mcp list (answered_from_cache ${afterClaude[name]})`);
  }
  log(`claude mcp list: all ten '✔ Connected' (${claudeSessions} sessions, requests answered from the cache: ${answeredBy(atRestart, afterClaude)}), no server process started`);

  // --- Gemini CLI: the ten in ~/.gemini/settings.json, the project folder trusted.
  const gemini = packageBin('@google/gemini-cli', 'gemini');
  log(`Gemini CLI ${gemini.version} (${gemini.script})`);
  const settings = {
    mcpServers: Object.fromEntries(NAMES.map((name) => [name, { command: 'mcpctl', args: ['connect', name] }])),
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
  fs.writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }, null, 2));
  const geminiEnv = { ...process.env, HOME: home, GEMINI_TELEMETRY_ENABLED: 'false', NO_COLOR: '1' };
  const geminiBefore = ctx.attachedSessions();
  const geminiList = await ctx.run('gemini mcp list', process.execPath, [gemini.script, 'mcp', 'list'], { env: geminiEnv, cwd: project, timeoutMs: 60000 });
  check(geminiList.status === 0, `gemini mcp list exited with ${geminiList.status ?? geminiList.signal}`);
  {
    const output = `${geminiList.stdout}\n${geminiList.stderr}`;
    const lines = output.split('\n').map((l) => l.trim()).filter((l) => l.includes(': mcpctl connect '));
    for (const name of NAMES) {
      const mine = lines.filter((l) => l.includes(` ${name}: `) || l.startsWith(`${name}: `));
      check(mine.length === 1, `gemini mcp list has ${mine.length} lines for ${name}:\n${output.trim()}`);
      check(/^✓ /.test(mine[0]) && mine[0].endsWith(` ${name}: mcpctl connect ${name} (stdio) - Connected`),
        `gemini mcp list reports ${name} as '${mine[0]}'`);
    }
    check(lines.length === NAMES.length, `gemini mcp list shows ${lines.length} mcpctl entries, not ${NAMES.length}:\n${output.trim()}`);
  }
  const geminiSessions = ctx.attachedSessions() - geminiBefore;
  check(geminiSessions >= NAMES.length, `gemini mcp list reported ten connected, but only ${geminiSessions} sessions attached to this mcpd`);
  const agents = checkStarts('after gemini mcp list', {});
  const afterGemini = answered(agents.status);
  for (const name of NAMES) {
    check(afterGemini[name] > afterClaude[name], `${name} answered nothing from its cache to gemini mcp list (answered_from_cache ${afterClaude[name]}, then ${afterGemini[name]})`);
  }
  log(`gemini mcp list: all ten 'Connected' (${geminiSessions} sessions, requests answered from the cache: ${answeredBy(afterClaude, afterGemini)}), no server process started`);
  checkSleepingText(ctx, 'after the agents');
  log(`server processes started during the agent phase: ${agents.processes.length}`);

  // --- The MCP Inspector's CLI on one of them: tools/list from the cache, then a call.
  const inspector = packageBin('@modelcontextprotocol/inspector', 'mcp-inspector');
  log(`MCP Inspector ${inspector.version} (${inspector.script})`);
  const config = path.join(ctx.tmp, 'inspector.json');
  fs.writeFileSync(config, JSON.stringify({ mcpServers: { [CALLED]: { command: 'mcpctl', args: ['connect', CALLED] } } }, null, 2));
  const inspect = async (label, args) => {
    const run = await ctx.run(`inspector ${label}`, process.execPath, [inspector.script, '--cli', '--config', config, '--server', CALLED, ...args], { timeoutMs: 30000 });
    check(run.status === 0, `inspector ${label}: exited with ${run.status ?? run.signal}: ${(run.stderr || run.stdout).trim().slice(-500)}`);
    try {
      return JSON.parse(run.stdout);
    } catch {
      fail(`inspector ${label}: printed no JSON: ${run.stdout.slice(0, 500)}`);
    }
  };
  const tools = await inspect('tools/list', ['--method', 'tools/list']);
  const toolNames = tools.tools?.map((t) => t.name) ?? [];
  check(toolNames.includes('echo'), `tools/list of ${CALLED} through the inspector lacks echo: ${toolNames.join(', ')}`);
  const afterList = answered(checkStarts('after the inspector\'s tools/list', {}).status);
  check(afterList[CALLED] >= afterGemini[CALLED] + 2, `${CALLED} did not answer the inspector's initialize and tools/list from its cache (answered_from_cache ${afterGemini[CALLED]}, then ${afterList[CALLED]})`);
  log(`inspector tools/list of ${CALLED}: ${toolNames.length} tools, ${afterList[CALLED] - afterGemini[CALLED]} requests answered from the cache, no server process started`);

  const echo = await inspect('tools/call echo', ['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'message=woken']);
  check(echo.content?.[0]?.text === 'Echo: woken', `tools/call echo on ${CALLED} answered ${JSON.stringify(echo)}`);
  const called = checkStarts('after the inspector\'s tools/call echo', { [CALLED]: 1 });
  watch.stop();
  const everythingScript = ctx.definitions[CALLED].script;
  const [[pid, { cmdline }]] = called.processes;
  check(cmdline.split(' ').includes(everythingScript), `the one process started runs '${cmdline}', not server-everything (${everythingScript})`);
  log(`inspector tools/call echo on ${CALLED}: '${echo.content[0].text}', ${CALLED} started once (pid ${pid}), the other nine still asleep`);
  log(`server processes started after the inspector's call: ${called.processes.length}`);
});
