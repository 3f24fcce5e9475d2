// The registry a scenario runs mcpd on: each server it names as an entry (a reference server
// installed by npm ci, or this build's demo server), written as TOML.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, fail } from './checks.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

// The installed package's entry point (its `bin`: `name`, else the first), run with this very node.
export function packageBin(pkg, name) {
  const dir = path.join(HERE, 'node_modules', ...pkg.split('/'));
  const manifestPath = path.join(dir, 'package.json');
  if (!fs.existsSync(manifestPath)) {
    fail(`${pkg} is not installed in ${path.join(HERE, 'node_modules')}: run 'npm ci' in ${HERE}`);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const bins = typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : (manifest.bin ?? {});
  const bin = name ? bins[name] : Object.values(bins)[0];
  if (!bin) fail(`${pkg} has no bin entry${name ? ` '${name}'` : ''} in its package.json`);
  return { script: path.join(dir, bin), version: manifest.version };
}

// This build's mcpd-demo-server (tests/fixtures/demo_server) run with `flags`, as a registry entry.
function demoServerDefinition(binDir, flags) {
  const bin = path.join(binDir, 'mcpd-demo-server');
  check(fs.existsSync(bin), `${bin} does not exist: build the mcpd-demo-server target or pass --bin-dir`);
  const run = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 5000 });
  const version = `${(run.stdout || '').trim() || 'mcpd-demo-server'} ${flags.join(' ')}`.trim();
  return { command: bin, args: flags, env: {}, script: bin, version };
}

// The servers the scenarios use, as registry entries: a reference server by name,
// { name, demo: [FLAGS] } for the demo server of this build under that name, or
// { name, server: 'everything' } for a reference server under another name (several entries of
// one server in a registry).
export function serverDefinition(server, tmp, binDir) {
  if (typeof server === 'object' && server.demo) return demoServerDefinition(binDir, server.demo);
  if (typeof server === 'object') return referenceServerDefinition(server.server, tmp, server.name);
  return referenceServerDefinition(server, tmp, server);
}

function referenceServerDefinition(server, tmp, name) {
  switch (server) {
    case 'everything': {
      const { script, version } = packageBin('@modelcontextprotocol/server-everything');
      return { command: process.execPath, args: [script, 'stdio'], env: {}, script, version };
    }
    case 'memory': {
      const { script, version } = packageBin('@modelcontextprotocol/server-memory');
      // Each entry its own knowledge graph file.
      const env = { MEMORY_FILE_PATH: path.join(tmp, name === 'memory' ? 'memory.jsonl' : `memory-${name}.jsonl`) };
      return { command: process.execPath, args: [script], env, script, version };
    }
    case 'filesystem': {
      // One child per project, allowed its project's directory: the roots mcpd answers it
      // with, and {project} as its argument (which it also needs when a client has no roots).
      const { script, version } = packageBin('@modelcontextprotocol/server-filesystem');
      const settings = { sharing: '"project"', idle_timeout: '"3s"', max_children: '4' };
      return { command: process.execPath, args: [script, '{project}'], env: {}, script, version, settings };
    }
    default:
      fail(`no definition for server '${server}'`);
  }
}

// TOML basic strings accept JSON's escapes for the strings written here.
const tomlString = (s) => JSON.stringify(s);

// `daemonToml`: more keys of the [daemon] table (http_listen, say), one a line.
export function registryToml(definitions, extraToml = '', daemonToml = '') {
  const lines = ['[daemon]', 'log_level = "debug"', ...(daemonToml ? [daemonToml] : []), ''];
  for (const [name, def] of Object.entries(definitions)) {
    lines.push(`[servers.${name}]`);
    lines.push(`command = ${tomlString(def.command)}`);
    lines.push(`args = [${def.args.map(tomlString).join(', ')}]`);
    const env = Object.entries(def.env);
    if (env.length > 0) {
      lines.push(`env = { ${env.map(([k, v]) => `${k} = ${tomlString(v)}`).join(', ')} }`);
    }
    for (const [key, value] of Object.entries(def.settings ?? {})) lines.push(`${key} = ${value}`);
    lines.push('autostart = true');
    lines.push('restart = "never"');
    lines.push('start_timeout = "30s"');
    // server-everything stays up after its stdin closes: no need to wait the default 2 s for it.
    lines.push('stop_grace = "500ms"');
    lines.push('');
  }
  if (extraToml) lines.push(extraToml);
  return lines.join('\n');
}
