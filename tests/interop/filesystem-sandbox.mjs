// @modelcontextprotocol/server-filesystem under sandbox = "project", one child per project,
// with a secrets directory inside each project that the sandbox hides. Each child reads and
// writes its own project; the other project's files are denied; the hidden directory is empty
// for the child although server-filesystem itself allows every path of its project, so only
// the sandbox stands between the tool and the file. Every child runs with no_new_privs.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, resultText } from './harness.mjs';

// The installed packages the server runs from: outside every preset, so granted by a rule.
const modules = fileURLToPath(new URL('./node_modules/', import.meta.url)).replace(/\/$/, '');
const sandbox = `{ preset = "project", read = [${JSON.stringify(modules)}], hide = ["{project}/.secrets"] }`;

await scenario('server-filesystem under sandbox = "project"', {
  servers: ['filesystem'],
  serverSettings: { filesystem: { sandbox } },
  timeoutSeconds: 90,
}, async (ctx) => {
  check(!ctx.direct, 'this scenario boxes the server through mcpd: run it without --direct');
  const projects = {};
  for (const name of ['alpha', 'beta']) {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(ctx.tmp, `${name}-`)));
    fs.writeFileSync(path.join(dir, 'README.txt'), `project ${name}\n`);
    fs.mkdirSync(path.join(dir, '.secrets'));
    fs.writeFileSync(path.join(dir, '.secrets', 'token'), `secret of ${name}\n`);
    projects[name] = dir;
  }
  const connectIn = async (project) => {
    const dir = projects[project];
    const client = await ctx.connect('filesystem', project, {
      capabilities: { roots: { listChanged: true } },
      cwd: dir,
      setup: (c) => c.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: `file://${dir}`, name: project }] })),
    });
    return { client, project, dir };
  };
  const clients = [await connectIn('alpha'), await connectIn('beta')];
  const call = (c, name, args) => c.client.callTool({ name, arguments: args });

  for (const c of clients) {
    const other = c.project === 'alpha' ? projects.beta : projects.alpha;
    const own = await call(c, 'read_text_file', { path: path.join(c.dir, 'README.txt') });
    check(!own.isError && resultText(own).includes(`project ${c.project}`),
      `${c.project}: reading its own file gave ${JSON.stringify(own)}`);
    const wrote = await call(c, 'write_file', { path: path.join(c.dir, 'notes.txt'), content: c.project });
    check(!wrote.isError && fs.readFileSync(path.join(c.dir, 'notes.txt'), 'utf8') === c.project,
      `${c.project}: writing in its own project gave ${JSON.stringify(wrote)}`);
    const listing = resultText(await call(c, 'list_directory', { path: c.dir }));
    check(listing.includes('README.txt') && listing.includes('.secrets'),
      `${c.project}: its project lists as ${JSON.stringify(listing)}`);
    const foreign = await call(c, 'read_text_file', { path: path.join(other, 'README.txt') });
    check(foreign.isError === true, `${c.project}: the other project's file was read: ${JSON.stringify(foreign)}`);
    // Inside its own allowed directory, so server-filesystem would read it: the sandbox hides it.
    const hidden = await call(c, 'read_text_file', { path: path.join(c.dir, '.secrets', 'token') });
    check(hidden.isError === true && !resultText(hidden).includes('secret of'),
      `${c.project}: the hidden token was read: ${JSON.stringify(hidden)}`);
    const hiddenList = await call(c, 'list_directory', { path: path.join(c.dir, '.secrets') });
    check(!resultText(hiddenList).includes('token'),
      `${c.project}: the hidden directory lists as ${JSON.stringify(hiddenList)}`);
  }
  log('each child reads and writes its own project; the other project and the hidden directory are out of reach');

  const pids = ctx.serverPids('filesystem');
  check(pids.length === 2, `${pids.length} server-filesystem processes run for 2 projects`);
  const daemonLog = fs.readFileSync(ctx.daemonLog, 'utf8');
  const line = /\[filesystem\] sandbox: ([^\n]*)/.exec(daemonLog);
  check(line !== null, 'mcpd\'s log says nothing of the sandbox');
  log(`mcpd: ${line[1]}`);
  if (line[1].includes('Landlock')) {
    for (const pid of pids) {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      check(/NoNewPrivs:\s+1/.test(status), `server-filesystem pid ${pid} runs without no_new_privs`);
    }
  } else {
    log('no Landlock on this kernel: the hidden directory was covered by the mount namespace alone');
  }
  await ctx.closeClients();
});
