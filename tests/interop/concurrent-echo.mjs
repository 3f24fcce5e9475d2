// Four SDK clients share one server-everything through mcpd: each initializes, lists the tools
// and calls `echo` 20 times, all 80 calls in flight together; every reply must carry its own
// request's message, and mcpd must run a single server process for the four of them.

import { scenario, log, check, fail, resultText } from './harness.mjs';

const CLIENTS = 4;
const CALLS = 20;

await scenario('concurrent clients calling echo', { servers: ['everything'] }, async (ctx) => {
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) => ctx.connect('everything', `echo-client-${i}`)),
  );
  log(`${CLIENTS} clients initialized`);

  for (const [i, client] of clients.entries()) {
    const server = client.getServerVersion();
    check(server?.name, `client ${i}: initialize result has no serverInfo.name`);
  }

  const toolLists = await Promise.all(clients.map((client) => client.listTools()));
  const names = toolLists.map((list) => list.tools.map((tool) => tool.name).sort().join(','));
  for (const [i, list] of toolLists.entries()) {
    check(list.tools.some((tool) => tool.name === 'echo'), `client ${i}: tools/list has no 'echo' tool (got ${names[i]})`);
    check(names[i] === names[0], `client ${i} got a different tool list than client 0:\n  ${names[i]}\n  ${names[0]}`);
  }
  log(`every client lists ${toolLists[0].tools.length} tools, echo among them`);

  // Interleave: round j issues call j of every client; nothing is awaited until all are sent.
  const calls = [];
  for (let j = 0; j < CALLS; j++) {
    for (const [i, client] of clients.entries()) {
      const message = `client ${i} call ${j} ${Math.random().toString(36).slice(2)}`;
      calls.push(
        client.callTool({ name: 'echo', arguments: { message } }).then((result) => ({ i, j, message, result })),
      );
    }
  }
  const replies = await Promise.all(calls);
  for (const { i, j, message, result } of replies) {
    check(!result.isError, `client ${i} call ${j}: echo returned an error: ${resultText(result)}`);
    const text = resultText(result);
    check(text === `Echo: ${message}`, `client ${i} call ${j}: sent '${message}', got back '${text}'`);
  }
  log(`${replies.length} echo replies, each matching its own request`);

  if (!ctx.direct) {
    const pids = ctx.serverPids('everything');
    if (pids.length !== 1) fail(`expected one server-everything process under mcpd for ${CLIENTS} clients, found ${pids.length} (${pids.join(', ')})`);
    log(`one server-everything process (pid ${pids[0]}) served all ${CLIENTS} clients`);

    const listed = ctx.mcpctlJson(['sessions', 'everything']).sessions ?? [];
    const mine = listed.filter((s) => /^echo-client-\d$/.test(s.client?.name ?? '')).map((s) => s.client.name).sort();
    check(
      mine.join(',') === clients.map((_, i) => `echo-client-${i}`).join(','),
      `'mcpctl sessions everything' does not list the ${CLIENTS} clients by their initialize names: ${JSON.stringify(listed)}`,
    );
    log(`'mcpctl sessions' lists them: ${listed.map((s) => `${s.client?.name} (${s.transport})`).join(', ')}`);
  }
});
