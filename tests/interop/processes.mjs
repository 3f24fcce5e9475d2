// The processes and namespaces a scenario deals with: mcpd's descendants from /proc, killing
// a client's process group, and the private namespaces and environment of a `userRuntimeDir`
// scenario (user-runtime-ns.sh).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { check, fail } from './checks.mjs';

export function tail(text, lines) {
  const all = text.split('\n');
  return (all.length > lines ? [`... (${all.length - lines} earlier lines)`] : [])
    .concat(all.slice(-lines))
    .join('\n');
}

export function readIfExists(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

// Every descendant pid of `pid`, from /proc.
export function descendants(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readIfExists(`/proc/${entry}/stat`);
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(entry));
  }
  const result = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()) ?? []) {
      result.push(child);
      queue.push(child);
    }
  }
  return result;
}

// SIGKILL to the process group of a child started with `detached: true` (it leads its group).
export function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {}
}

function namespaceOf(pid, kind) {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/${kind}`);
  } catch {
    return null;
  }
}

// For a `userRuntimeDir` scenario: root, in a mount and a network namespace of its own (as
// user-runtime-ns.sh makes), with a /run/user/UID owned by this user. Returns that directory.
export function checkUserRuntimeNamespace() {
  const script = path.basename(process.argv[1]);
  if (process.getuid() !== 0) {
    fail(`${script} needs root: it runs in private mount and network namespaces; run it as root through user-runtime-ns.sh (ctest does)`);
  }
  // Never start mcpd on the machine's real /run/user/UID, nor clients with the network reachable.
  const own = ['mnt', 'net'].map((kind) => namespaceOf('self', kind));
  const host = ['mnt', 'net'].map((kind) => namespaceOf(1, kind));
  if (process.env.MCPD_INTEROP_NAMESPACES !== own.join(' ') || own.some((ns, i) => ns === host[i])) {
    fail(`${script} is not in the mount and network namespaces user-runtime-ns.sh makes: run it through that script`);
  }
  const interfaces = Object.keys(os.networkInterfaces()).filter((name) => name !== 'lo');
  check(interfaces.length === 0, `network interfaces besides loopback in the scenario's namespace: ${interfaces.join(', ')}`);
  const runtimeDir = `/run/user/${process.getuid()}`;
  let st = null;
  try {
    st = fs.lstatSync(runtimeDir);
  } catch {}
  check(st?.isDirectory() && st.uid === process.getuid(), `${runtimeDir} is not a directory of this user's: run it through user-runtime-ns.sh`);
  return runtimeDir;
}

// Makes this process's environment the one every client of a `userRuntimeDir` scenario starts
// from: nothing that names the socket, mcpctl (and this node) first on PATH.
export function becomeAgentEnvironment(binDir) {
  for (const key of ['XDG_RUNTIME_DIR', 'MCPD_SOCKET', 'MCPD_HOST', 'MCPD_INTEROP_NAMESPACES']) delete process.env[key];
  process.env.PATH = [binDir, path.dirname(process.execPath), process.env.PATH || '/usr/bin:/bin'].join(':');
}
