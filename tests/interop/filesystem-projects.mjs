// The most used MCP server, @modelcontextprotocol/server-filesystem, behind mcpd with
// sharing = "project": two projects, two SDK clients in each, all at once, each declaring the
// roots capability with its own project directory and running `mcpctl connect` there, as an
// agent working in that project does. Every client sees exactly its own project's allowed
// directory, reads its own files and is denied the other project's; two projects start two
// children, never three; once the clients leave, the children stop at idle_timeout.

import fs from 'node:fs';
import path from 'node:path';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, waitFor, resultText } from './harness.mjs';

function vmRssKiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

await scenario('server-filesystem, one child per project', { servers: ['filesystem'], timeoutSeconds: 90 }, async (ctx) => {
  const projects = {};
  for (const name of ['alpha', 'beta']) {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(ctx.tmp, `${name}-`)));
    fs.writeFileSync(path.join(dir, 'README.txt'), `project ${name}\n`);
    projects[name] = dir;
  }

  // Four clients, two per project, connected concurrently; the first of each project is timed
  // from its start to its first answer (a child is started for it).
  const connectIn = async (project, n) => {
    const dir = projects[project];
    const started = Date.now();
    const client = await ctx.connect('filesystem', `${project}-${n}`, {
      capabilities: { roots: { listChanged: true } },
      cwd: dir,
      setup: (c) => c.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: `file://${dir}`, name: project }] })),
    });
    const tools = await client.listTools();
    return { client, project, dir, firstAnswerMs: Date.now() - started, tools: tools.tools.map((t) => t.name) };
  };
  const clients = await Promise.all([connectIn('alpha', 1), connectIn('beta', 1), connectIn('alpha', 2), connectIn('beta', 2)]);
  for (const c of clients) {
    check(c.tools.includes('list_allowed_directories') && c.tools.includes('read_text_file'),
      `${c.project}: server-filesystem lists ${c.tools.join(', ')}`);
  }
  log(`attach to first answer (tools/list), new project: ${clients.slice(0, 2).map((c) => `${c.project} ${c.firstAnswerMs} ms`).join(', ')}`);

  // Each client sees its own project, reads its own file, and is denied the other's.
  for (const c of clients) {
    const other = c.project === 'alpha' ? projects.beta : projects.alpha;
    const allowed = resultText(await c.client.callTool({ name: 'list_allowed_directories', arguments: {} }));
    check(allowed.includes(c.dir) && !allowed.includes(other),
      `${c.project}: list_allowed_directories says ${JSON.stringify(allowed)}; expected ${c.dir} only`);
    const own = await c.client.callTool({ name: 'read_text_file', arguments: { path: path.join(c.dir, 'README.txt') } });
    check(!own.isError && resultText(own).includes(`project ${c.project}`), `${c.project}: reading its own file gave ${JSON.stringify(own)}`);
    const foreign = await c.client.callTool({ name: 'read_text_file', arguments: { path: path.join(other, 'README.txt') } });
    check(foreign.isError === true && /denied|outside|not allowed/i.test(resultText(foreign)),
      `${c.project}: reading the other project's file was not denied: ${JSON.stringify(foreign)}`);
  }
  log('every client sees its own project only, and is denied the other');

  if (ctx.direct) return;
  // Two projects, two children: started once each, never a third.
  const pids = ctx.serverPids('filesystem');
  check(pids.length === 2, `${pids.length} server-filesystem processes run for 2 projects: ${pids.join(', ')}`);
  const started = (fs.readFileSync(ctx.daemonLog, 'utf8').match(/starting a child for project /g) ?? []).length;
  check(started === 2, `mcpd started ${started} children for 2 projects`);
  const status = ctx.mcpctlJson(['status', 'filesystem']);
  const entry = (status.servers ?? [status]).find((s) => s.name === 'filesystem');
  const children = entry?.children ?? [];
  check(children.length === 2 && children.every((child) => child.sessions === 2),
    `mcpctl status shows ${JSON.stringify(children)}`);
  check(children.map((child) => child.project).sort().join(' ') === [projects.alpha, projects.beta].sort().join(' '),
    `the children's projects are ${children.map((child) => child.project).join(', ')}`);
  log(`2 children for 2 projects x 2 clients, RSS ${pids.map((pid) => `${vmRssKiB(pid)} KiB`).join(' and ')}`);

  // The clients leave: both children stop at idle_timeout (3 s).
  await ctx.closeClients();
  await waitFor(() => ctx.serverPids('filesystem').length === 0, 15000, 'the idle children to stop');
  log('both children stopped after their last clients left');
});
