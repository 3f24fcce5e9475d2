// Cancellation: client A starts server-everything's long-running tool with an AbortSignal and
// aborts it after its first progress notification. The SDK rejects the call and sends
// notifications/cancelled; A's next calls must work, and client B, running the same tool at the
// same time, must get its whole run. A response to the cancelled request arriving later would be
// an SDK error ("unknown message ID"), which fails the scenario.

import { scenario, log, check, fail, sleep, resultText } from './harness.mjs';

const LONG_TOOL = 'trigger-long-running-operation';

await scenario('cancelling a request', { servers: ['everything'] }, async (ctx) => {
  const [a, b] = await Promise.all(['A', 'B'].map((n) => ctx.connect('everything', `cancel-${n}`)));
  const tools = (await a.listTools()).tools.map((t) => t.name);
  check(tools.includes(LONG_TOOL), `server-everything lists no '${LONG_TOOL}' tool (has: ${tools.join(', ')})`);

  const bProgress = [];
  const bRun = b.callTool({ name: LONG_TOOL, arguments: { duration: 3, steps: 6 } }, undefined, {
    onprogress: (p) => bProgress.push(p),
    timeout: 30000,
  });

  const controller = new AbortController();
  const aProgress = [];
  const started = Date.now();
  const aRun = a.callTool({ name: LONG_TOOL, arguments: { duration: 4, steps: 8 } }, undefined, {
    signal: controller.signal,
    timeout: 30000,
    onprogress: (p) => {
      aProgress.push(p);
      if (aProgress.length === 1) {
        log(`A: first progress ${p.progress}/${p.total}; aborting`);
        controller.abort('interop test cancels this call');
      }
    },
  });
  const outcome = await aRun.then(
    (result) => ({ result }),
    (error) => ({ error }),
  );
  if (outcome.result) fail(`A: the aborted call resolved instead of rejecting: ${resultText(outcome.result)}`);
  log(`A: the call rejected after ${Date.now() - started} ms: ${outcome.error?.message ?? outcome.error}`);

  const after = await a.callTool({ name: 'echo', arguments: { message: 'A after cancel' } });
  check(resultText(after) === 'Echo: A after cancel', `A: echo after the cancel returned '${resultText(after)}'`);
  log('A: echo after the cancel works');

  const bResult = await bRun;
  check(resultText(bResult).includes('Steps: 6'), `B: unexpected result: ${resultText(bResult)}`);
  check(bProgress.every((p) => p.total === 6), `B got progress that is not its own: ${bProgress.map((p) => `${p.progress}/${p.total}`).join(' ')}`);
  check(bProgress.length >= 5, `B: only ${bProgress.length} of 6 progress notifications`);
  log(`B: unaffected, its run completed with ${bProgress.length} progress notifications`);

  // Let the cancelled operation's time run out on the server, so a response it might still
  // send (or mcpd might still forward) would arrive now.
  const rest = 4000 - (Date.now() - started) + 500;
  if (rest > 0) await sleep(rest);
  const short = await a.callTool({ name: LONG_TOOL, arguments: { duration: 0.4, steps: 2 } }, undefined, { timeout: 15000 });
  check(resultText(short).includes('Steps: 2'), `A: long-running tool after the cancel returned '${resultText(short)}'`);
  log('A: a new long-running call after the cancel completes');

  // server-everything ignores cancellation and keeps sending progress for the cancelled request;
  // the SDK, having forgotten the token, reports each as "unknown token". Those are expected if
  // they are A's own (total 8); a response to the cancelled request is not.
  let lateProgress = 0;
  const unexpected = ctx.takeClientErrors((e) => {
    const match = /unknown token: (\{.*\})/s.exec(e.error);
    if (e.client === 'cancel-A' && match && JSON.parse(match[1]).params?.total === 8) return ++lateProgress > 0;
    // The last progress of B's run can arrive just after its result (see progress.mjs).
    if (e.client === 'cancel-B' && match) return JSON.parse(match[1]).params?.progress === 6;
    return false;
  });
  if (unexpected.length > 0) {
    fail(`client-side protocol errors:\n${unexpected.map((e) => `  ${e.client}: ${e.error}`).join('\n')}`);
  }
  log(`no response to the cancelled request reached A (${lateProgress} progress notifications of it did, after the cancel)`);
});
