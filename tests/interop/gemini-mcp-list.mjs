// A real agent CLI, Gemini CLI, set up the way a user sets it up: the server in
// ~/.gemini/settings.json as {"command": "mcpctl", "args": ["connect", "everything"]}, the
// project folder trusted. `gemini mcp list` starts each stdio server (with its own environment,
// less what looks like a secret), initializes and pings it; it must report the mcpctl entry as
// Connected, reaching a per-user mcpd on /run/user/UID/mcpd/mcpd.sock with neither
// XDG_RUNTIME_DIR nor MCPD_SOCKET in its environment. An entry naming a server mcpd does not
// have must show Disconnected, so "Connected" means a session really came up.
//
// Run as root through user-runtime-ns.sh: no network but loopback, whatever the CLI tries. Its
// update checks and telemetry are switched off as documented all the same. `mcp list` needs no
// login.

import fs from 'node:fs';
import path from 'node:path';
import { scenario, log, check, packageBin } from './harness.mjs';

await scenario('gemini mcp list through the per-user mcpd in /run/user/UID', { servers: ['everything'], userRuntimeDir: true, timeoutSeconds: 90 }, async (ctx) => {
  ctx.checkDefaultSocket();

  const gemini = packageBin('@google/gemini-cli', 'gemini');
  log(`Gemini CLI ${gemini.version} (${gemini.script})`);
  const home = path.join(ctx.tmp, 'home');
  const project = path.join(ctx.tmp, 'project');
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  fs.mkdirSync(project);
  const settings = {
    mcpServers: {
      everything: { command: 'mcpctl', args: ['connect', 'everything'] },
      'not-in-registry': { command: 'mcpctl', args: ['connect', 'not-in-registry'] },
    },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
  // What trusting the folder at the CLI's first start writes: stdio servers run only in a trusted one.
  fs.writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }, null, 2));

  // `mcp list` gives each server 5 s to connect: let server-everything finish starting first.
  await ctx.waitRunning('everything');
  const env = { ...process.env, HOME: home, GEMINI_TELEMETRY_ENABLED: 'false', NO_COLOR: '1' };
  const before = ctx.attachedSessions();
  const run = await ctx.run('gemini mcp list', process.execPath, [gemini.script, 'mcp', 'list'], { env, cwd: project, timeoutMs: 60000 });
  const output = `${run.stdout}\n${run.stderr}`;
  check(run.status === 0, `gemini mcp list exited with ${run.status ?? run.signal}`);

  const line = (name) => output.split('\n').find((l) => l.includes(`${name}: mcpctl connect ${name} (stdio)`));
  const everything = line('everything');
  check(everything, `gemini mcp list does not list the everything entry:\n${output.trim()}`);
  check(/ - Connected\s*$/.test(everything), `gemini mcp list reports the mcpctl entry as not connected: '${everything.trim()}'`);
  log(`gemini mcp list: '${everything.trim()}'`);
  const missing = line('not-in-registry');
  check(missing && / - Disconnected\s*$/.test(missing), `gemini mcp list should report a server mcpd lacks as Disconnected: '${missing?.trim()}'`);
  log(`gemini mcp list: '${missing.trim()}'`);

  check(ctx.attachedSessions() > before, "gemini mcp list reported Connected, but no session attached to this scenario's mcpd");
  log(`gemini's session went to this mcpd's server-everything`);
});
