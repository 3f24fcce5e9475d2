// Requests from the server go to the client whose call caused them. Clients A and B both declare
// sampling and elicitation and register handlers that record every call. A calls
// server-everything's `trigger-sampling-request` tool, which sends sampling/createMessage
// while A's call is in flight: A's handler must answer it and B's never be called; then the
// other way round. The same with `trigger-elicitation-request` and elicitation/create.
// server-everything lists those two tools only when the client that initialized it declared
// the capabilities; through mcpd that client is mcpd itself.

import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, fail, resultText } from './harness.mjs';

const SAMPLING_TOOL = 'trigger-sampling-request';
const ELICIT_TOOL = 'trigger-elicitation-request';

await scenario('sampling and elicitation reach the calling client', { servers: ['everything'] }, async (ctx) => {
  const calls = { A: { sampling: [], elicitation: [] }, B: { sampling: [], elicitation: [] } };
  const connect = (label) =>
    ctx.connect('everything', `requests-${label}`, {
      capabilities: { sampling: {}, elicitation: {} },
      setup: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
          const prompt = request.params.messages.map((m) => m.content?.text ?? '').join(' ');
          calls[label].sampling.push(prompt);
          return {
            model: `interop-model-${label}`,
            role: 'assistant',
            content: { type: 'text', text: `sampled by ${label}` },
          };
        });
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          calls[label].elicitation.push(request.params.message);
          return { action: 'accept', content: { name: `Interop ${label}` } };
        });
      },
    });
  const [a, b] = await Promise.all([connect('A'), connect('B')]);
  const clientOf = { A: a, B: b };

  const tools = (await a.listTools()).tools.map((t) => t.name);
  for (const tool of [SAMPLING_TOOL, ELICIT_TOOL]) {
    if (!tools.includes(tool)) {
      fail(
        `server-everything lists no '${tool}' tool: it registers it only when its client declared ` +
          `the ${tool === SAMPLING_TOOL ? 'sampling' : 'elicitation'} capability at initialize` +
          `${ctx.direct ? '' : ' (through mcpd: mcpd\'s own initialize)'}; tools: ${tools.join(', ')}`,
      );
    }
  }

  const counts = () => JSON.stringify(calls, (k, v) => (Array.isArray(v) ? v.length : v));
  for (const [caller, idle] of [['A', 'B'], ['B', 'A']]) {
    const prompt = `prompt from ${caller} ${Math.random().toString(36).slice(2)}`;
    const result = await clientOf[caller].callTool({ name: SAMPLING_TOOL, arguments: { prompt, maxTokens: 16 } }, undefined, { timeout: 20000 });
    const text = resultText(result);
    check(!result.isError, `${caller}: ${SAMPLING_TOOL} failed: ${text}`);
    check(text.includes(`sampled by ${caller}`) && text.includes(`interop-model-${caller}`), `${caller}: the sampling result is not its own handler's: ${text}`);
    check(calls[caller].sampling.some((p) => p.includes(prompt)), `${caller}: its sampling handler never saw its prompt (calls: ${counts()})`);
    check(calls[idle].sampling.length === 0, `${idle}'s sampling handler was called for ${caller}'s request: ${calls[idle].sampling.join(' | ')}`);
    log(`${caller}: sampling/createMessage answered by ${caller}'s handler; ${idle}'s was not called`);
    calls[caller].sampling = [];
  }

  for (const [caller, idle] of [['A', 'B'], ['B', 'A']]) {
    const result = await clientOf[caller].callTool({ name: ELICIT_TOOL, arguments: {} }, undefined, { timeout: 20000 });
    const text = resultText(result);
    check(!result.isError, `${caller}: ${ELICIT_TOOL} failed: ${text}`);
    check(text.includes(`Name: Interop ${caller}`), `${caller}: the elicitation result is not its own handler's: ${text}`);
    check(calls[caller].elicitation.length === 1, `${caller}: its elicitation handler was called ${calls[caller].elicitation.length} times`);
    check(calls[idle].elicitation.length === 0, `${idle}'s elicitation handler was called for ${caller}'s request`);
    log(`${caller}: elicitation/create answered by ${caller}'s handler; ${idle}'s was not called`);
    calls[caller].elicitation = [];
  }

  // With B's own call in flight too, nothing on the wire says whose call the sampling request
  // belongs to: mcpd may answer it with A's handler or decline it, but never hand it to B.
  const bBusy = b.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1.5, steps: 3 } }, undefined, { timeout: 20000 });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const outcome = await a
    .callTool({ name: SAMPLING_TOOL, arguments: { prompt: 'while B is busy', maxTokens: 16 } }, undefined, { timeout: 20000 })
    .then((result) => resultText(result), (error) => `error: ${error?.message ?? error}`);
  await bBusy;
  check(calls.B.sampling.length === 0, `B's sampling handler was called for A's request while B had a call in flight: ${calls.B.sampling.join(' | ')}`);
  check(!outcome.includes('sampled by B'), `A's sampling request was answered by B: ${outcome}`);
  const answered = outcome.includes('sampled by A');
  log(`with B busy as well, A's sampling request was ${answered ? "answered by A's handler" : `not routed (${outcome.replace(/\s+/g, ' ').slice(0, 120)})`}; B's handler was not called`);
});
