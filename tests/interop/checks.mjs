// What every interop scenario reports with: its log (seconds since it started), its
// failures (a ScenarioError, which the runner prints as FAIL), and waiting for a condition.

const STARTED = Date.now();

export class ScenarioError extends Error {}

export function log(message) {
  const t = ((Date.now() - STARTED) / 1000).toFixed(2).padStart(6);
  process.stdout.write(`[${t}s] ${message}\n`);
}

export function fail(message) {
  throw new ScenarioError(message);
}

export function check(condition, message) {
  if (!condition) fail(message);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Every tool name a client lists, following nextCursor to the end.
export async function allToolNames(client) {
  const names = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const result = await client.listTools(cursor ? { cursor } : {});
    names.push(...result.tools.map((t) => t.name));
    if (!result.nextCursor) return names;
    cursor = result.nextCursor;
  }
  fail('tools/list did not end within 100 pages');
}

// Polls `predicate` every 50 ms; fails with `what` if it is still false after `timeoutMs`.
export async function waitFor(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() >= deadline) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

// The text of a tools/call result's content blocks, joined.
export function resultText(result) {
  return (result?.content ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}
