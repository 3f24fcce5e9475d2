// An agent configured as the README says, {"command": "mcpctl", "args": ["connect", "everything"]},
// reaches a per-user mcpd run the way `systemctl --user` runs it (XDG_RUNTIME_DIR=/run/user/UID
// in mcpd's environment only): SDK clients start mcpctl with the SDK's default environment (no
// XDG_RUNTIME_DIR, no MCPD_SOCKET), so mcpctl must find /run/user/UID/mcpd/mcpd.sock by itself.
// Run as root through user-runtime-ns.sh.

import { scenario, log, check, resultText } from './harness.mjs';

await scenario('SDK clients reach the per-user mcpd in /run/user/UID', { servers: ['everything'], userRuntimeDir: true }, async (ctx) => {
  ctx.checkDefaultSocket();

  const clients = await Promise.all([ctx.connect('everything', 'runtime-dir-A'), ctx.connect('everything', 'runtime-dir-B')]);
  log('2 SDK clients initialized through `mcpctl connect everything` with the SDK default environment');

  const replies = await Promise.all(
    clients.map((client, i) => client.callTool({ name: 'echo', arguments: { message: `hello from ${i}` } })),
  );
  for (const [i, reply] of replies.entries()) {
    check(resultText(reply).includes(`hello from ${i}`), `client ${i}: echo answered ${JSON.stringify(reply)}`);
  }
  log('each echo came back to its own client');

  const sessions = ctx.mcpctlJson(['sessions', 'everything']);
  const list = Array.isArray(sessions) ? sessions : (sessions.sessions ?? []);
  const names = list.map((s) => s.client?.name);
  for (const name of ['runtime-dir-A', 'runtime-dir-B']) {
    check(names.includes(name), `mcpctl sessions on ${ctx.socket} does not list ${name}: ${JSON.stringify(sessions)}`);
  }
  check(ctx.serverPids('everything').length === 1, `expected one server-everything below mcpd, found ${ctx.serverPids('everything').length}`);
  log(`mcpd on ${ctx.socket} lists both sessions on its one server-everything`);
});
