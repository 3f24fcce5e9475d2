// Progress notifications reach the client whose request they belong to, and no other. Clients A
// and B run server-everything's long-running tool at the same time with different step counts,
// after the same sequence of requests, so the SDK gives both requests the same id and the same
// progressToken: mcpd has to tell them apart. Client C runs it without asking for progress
// while echoing; a progress notification it did not ask for would be an SDK error
// ("unknown token"), which the harness fails on.

import { scenario, log, check, fail, resultText } from './harness.mjs';

const LONG_TOOL = 'trigger-long-running-operation';

await scenario('progress notifications go to their own client', { servers: ['everything'] }, async (ctx) => {
  const [a, b, c] = await Promise.all(['A', 'B', 'C'].map((n) => ctx.connect('everything', `progress-${n}`)));
  const tools = (await a.listTools()).tools.map((t) => t.name);
  await b.listTools();
  await c.listTools();
  check(tools.includes(LONG_TOOL), `server-everything lists no '${LONG_TOOL}' tool (has: ${tools.join(', ')})`);

  const runs = [
    { client: a, label: 'A', args: { duration: 2, steps: 4 }, progress: [] },
    { client: b, label: 'B', args: { duration: 3, steps: 6 }, progress: [] },
  ];
  log('A (4 steps) and B (6 steps) start the long-running tool with onprogress; C runs it without');
  const withProgress = runs.map((run) =>
    run.client
      .callTool({ name: LONG_TOOL, arguments: run.args }, undefined, {
        onprogress: (p) => run.progress.push(p),
        timeout: 30000,
      })
      .then((result) => (run.result = result)),
  );
  const withoutProgress = c.callTool({ name: LONG_TOOL, arguments: { duration: 1, steps: 2 } }, undefined, { timeout: 30000 });
  const echoes = [];
  for (let i = 0; i < 10; i++) echoes.push(c.callTool({ name: 'echo', arguments: { message: `C ${i}` } }));
  const [cResult, ...echoResults] = await Promise.all([withoutProgress, ...echoes, ...withProgress]);

  check(resultText(cResult).includes('Steps: 2'), `C: unexpected long-running result: ${resultText(cResult)}`);
  for (const [i, r] of echoResults.slice(0, 10).entries()) {
    check(resultText(r) === `Echo: C ${i}`, `C: echo ${i} came back as '${resultText(r)}'`);
  }

  // The SDK handles a response at once but a notification a tick later, so the last progress
  // notification, written just before the response, can reach the client after the request is
  // done: it then reports "unknown token" for it. Such a late final notification of the client's
  // own run counts as received; anything else is a misrouted notification.
  const late = { A: 0, B: 0 };
  const unexpected = ctx.takeClientErrors((e) => {
    const match = /unknown token: (\{.*\})/s.exec(e.error);
    const run = runs.find((r) => `progress-${r.label}` === e.client);
    if (!match || !run) return false;
    const { params } = JSON.parse(match[1]);
    if (params?.total !== run.args.steps || params?.progress !== run.args.steps) return false;
    late[run.label] += 1;
    return true;
  });
  if (unexpected.length > 0) {
    fail(`client-side protocol errors (misrouted notifications?):\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  }

  for (const run of runs) {
    const { steps } = run.args;
    const text = resultText(run.result);
    check(text.includes(`Steps: ${steps}`), `${run.label}: result is not its own (${steps} steps): '${text}'`);
    const seen = run.progress.map((p) => `${p.progress}/${p.total}`).join(' ');
    for (const [k, p] of run.progress.entries()) {
      if (p.total !== steps || p.progress !== k + 1) {
        fail(`${run.label}: progress notifications are not its own (expected 1/${steps} .. ${steps}/${steps}): ${seen}`);
      }
    }
    if (run.progress.length + late[run.label] !== steps) {
      fail(`${run.label}: expected ${steps} progress notifications, got ${run.progress.length}: ${seen}`);
    }
    log(`${run.label}: progress ${seen}${late[run.label] ? ` (+ ${steps}/${steps} after the result)` : ''}, all its own`);
  }
});
