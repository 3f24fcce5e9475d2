// A JSON-RPC session over newline-delimited stdio, written by hand: for the protocol revisions the
// pinned SDK client does not speak (2026-07-28, whose requests carry the protocol version and the
// client's capabilities in params._meta and which has no initialize). It runs `command` (mcpctl
// connect NAME, or the server itself with --direct), numbers its requests, matches replies by id
// and keeps every other message it receives, in order.

import { spawn } from 'node:child_process';
import readline from 'node:readline';

export const MODERN_VERSION = '2026-07-28';
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
};

// The params._meta every 2026-07-28 request carries; `logLevel` asks for that request's logs.
export function modernMeta(clientName, { logLevel } = {}) {
  const meta = {
    [META.protocolVersion]: MODERN_VERSION,
    [META.clientCapabilities]: {},
    [META.clientInfo]: { name: clientName, version: '1.0.0' },
  };
  if (logLevel) meta[META.logLevel] = logLevel;
  return meta;
}

export class LineSession {
  // `onStderr(text)` gets the process's stderr; `onError(message)` what breaks the protocol
  // (lines that are not JSON, replies to ids never sent).
  constructor(label, command, args, { env = process.env, onStderr = () => {}, onError = () => {} } = {}) {
    this.label = label;
    this.nextId = 1;
    this.pending = new Map();
    this.received = [];
    this.waiters = new Set();
    this.onError = onError;
    this.child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => resolve({ code, signal }));
      this.child.on('error', (error) => resolve({ code: null, signal: null, error }));
    });
    this.exited.then((status) => this.failPending(`${label}: ${command} ended (${JSON.stringify(status)})`));
    this.child.stdin.on('error', () => {});
    this.child.stderr.on('data', (chunk) => onStderr(chunk.toString()));
    readline.createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on('line', (line) => this.receive(line));
  }

  receive(line) {
    if (line.trim() === '') return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      this.onError(`a line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    const isReply = message && typeof message === 'object' && !('method' in message) && ('result' in message || 'error' in message);
    if (isReply) {
      const waiter = this.pending.get(JSON.stringify(message.id));
      if (!waiter) {
        this.onError(`a reply to an id never sent (or already answered): ${line.slice(0, 200)}`);
        return;
      }
      this.pending.delete(JSON.stringify(message.id));
      waiter.resolve(message);
      return;
    }
    this.received.push(message);
    for (const check of this.waiters) check();
  }

  failPending(reason) {
    for (const waiter of this.pending.values()) waiter.reject(new Error(reason));
    this.pending.clear();
  }

  send(message) {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  // Sends a request; resolves with the whole reply ({ result } or { error }), rejects after
  // `timeoutMs` or when the process ends first. `id` overrides the session's own numbering.
  request(method, params, { timeoutMs = 10000, id } = {}) {
    const requestId = id ?? this.nextId++;
    const key = JSON.stringify(requestId);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key);
        reject(new Error(`${this.label}: no reply to ${method} (id ${key}) within ${timeoutMs} ms`));
      }, timeoutMs);
      const settle = (fn) => (value) => {
        clearTimeout(timer);
        fn(value);
      };
      this.pending.set(key, { resolve: settle(resolve), reject: settle(reject) });
      this.send({ jsonrpc: '2.0', id: requestId, method, ...(params === undefined ? {} : { params }) });
    });
  }

  // Registers a request id that will be answered later, like a subscriptions/listen stream's
  // final result: the reply is then expected, not an error. Returns the promise of that reply.
  expectReply(id) {
    const reply = new Promise((resolve, reject) => this.pending.set(JSON.stringify(id), { resolve, reject }));
    reply.catch(() => {});  // a stream still open when the session ends is no failure by itself
    return reply;
  }

  notify(method, params) {
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });
  }

  // Resolves with the first message received from index `from` on that `predicate` accepts;
  // rejects with `what` after `timeoutMs`.
  waitFor(predicate, timeoutMs, what, from = 0) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.received.slice(from).find(predicate);
        if (!found) return false;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${this.label}: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  // Closes stdin (the end of the session) and waits for the process; SIGKILL after 5 s.
  async close() {
    this.child.stdin.end();
    const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 5000));
    if ((await Promise.race([this.exited, timeout])) === 'timeout') {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}
