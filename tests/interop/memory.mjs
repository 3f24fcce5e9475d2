// A second reference server, @modelcontextprotocol/server-memory (a knowledge graph kept in a
// file), shared by two clients through mcpd: what one writes the other reads, reads from both
// run interleaved, and a client subscribed to the graph resource hears of the other's writes.

import fs from 'node:fs';
import path from 'node:path';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { scenario, log, check, waitFor, sleep } from './harness.mjs';

const GRAPH_URI = 'memory://knowledge-graph';

// memory's tools answer with the JSON as text (and as structuredContent).
function graphOf(result, who) {
  check(!result.isError, `${who}: ${result.content?.[0]?.text}`);
  return result.structuredContent ?? JSON.parse(result.content[0].text);
}

await scenario('two clients share server-memory', { servers: ['memory'] }, async (ctx) => {
  const updates = { A: [], B: [] };
  const connect = (label) =>
    ctx.connect('memory', `memory-${label}`, {
      setup: (client) =>
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates[label].push(n.params.uri)),
    });
  const [a, b] = await Promise.all([connect('A'), connect('B')]);

  const [toolsA, toolsB] = await Promise.all([a.listTools(), b.listTools()]);
  for (const [label, list] of [['A', toolsA], ['B', toolsB]]) {
    const names = list.tools.map((t) => t.name);
    for (const tool of ['create_entities', 'create_relations', 'add_observations', 'read_graph', 'search_nodes', 'open_nodes']) {
      check(names.includes(tool), `${label}: server-memory lists no '${tool}' (has: ${names.join(', ')})`);
    }
  }
  log(`A and B list ${toolsA.tools.length} tools`);

  const tag = Math.random().toString(36).slice(2, 8);
  const alpha = `interop-alpha-${tag}`;
  const beta = `interop-beta-${tag}`;

  const subscribable = a.getServerCapabilities()?.resources?.subscribe;
  if (subscribable) {
    await b.subscribeResource({ uri: GRAPH_URI });
    log(`B subscribed to ${GRAPH_URI}`);
  }

  const created = graphOf(
    await a.callTool({ name: 'create_entities', arguments: { entities: [{ name: alpha, entityType: 'test', observations: ['written by A'] }] } }),
    'A create_entities',
  );
  check(created.entities?.[0]?.name === alpha, `A: create_entities returned ${JSON.stringify(created)}`);
  log(`A created ${alpha}`);
  if (subscribable && !ctx.direct) {
    await waitFor(() => updates.B.includes(GRAPH_URI), 5000, `B (subscribed) to hear of A's write to ${GRAPH_URI}`);
    log("B was notified of A's write");
  }

  graphOf(await b.callTool({ name: 'create_entities', arguments: { entities: [{ name: beta, entityType: 'test', observations: ['written by B'] }] } }), 'B create_entities');
  graphOf(await b.callTool({ name: 'create_relations', arguments: { relations: [{ from: beta, to: alpha, relationType: 'points at' }] } }), 'B create_relations');
  log(`B created ${beta} and the relation ${beta} -> ${alpha}`);

  // Reads from both clients, interleaved and all in flight together.
  const reads = [];
  for (let round = 0; round < 5; round++) {
    reads.push(a.callTool({ name: 'read_graph', arguments: {} }).then((r) => ['A read_graph', r]));
    reads.push(b.callTool({ name: 'search_nodes', arguments: { query: tag } }).then((r) => ['B search_nodes', r]));
    reads.push(a.callTool({ name: 'open_nodes', arguments: { names: [alpha, beta] } }).then((r) => ['A open_nodes', r]));
    reads.push(b.callTool({ name: 'read_graph', arguments: {} }).then((r) => ['B read_graph', r]));
  }
  for (const [who, result] of await Promise.all(reads)) {
    const graph = graphOf(result, who);
    const names = graph.entities.map((e) => e.name);
    check(names.includes(alpha) && names.includes(beta), `${who}: expected ${alpha} and ${beta}, got ${names.join(', ')}`);
    check(
      graph.relations.some((r) => r.from === beta && r.to === alpha),
      `${who}: the relation ${beta} -> ${alpha} is missing: ${JSON.stringify(graph.relations)}`,
    );
  }
  log(`${reads.length} interleaved reads from A and B all see both entities and the relation`);

  graphOf(await a.callTool({ name: 'add_observations', arguments: { observations: [{ entityName: beta, contents: ['A was here'] }] } }), 'A add_observations');
  const opened = graphOf(await b.callTool({ name: 'open_nodes', arguments: { names: [beta] } }), 'B open_nodes');
  const observations = opened.entities.find((e) => e.name === beta)?.observations ?? [];
  check(observations.includes('A was here') && observations.includes('written by B'), `B: ${beta}'s observations are ${JSON.stringify(observations)}`);
  log(`B sees the observation A added to ${beta}`);

  const resource = await a.readResource({ uri: GRAPH_URI });
  const text = resource.contents?.[0]?.text ?? '';
  check(text.includes(alpha) && text.includes(beta), `A: resources/read ${GRAPH_URI} lacks the entities: ${text.slice(0, 200)}`);
  log(`A reads ${GRAPH_URI} with both entities`);

  const file = ctx.definitions.memory.env.MEMORY_FILE_PATH;
  const stored = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  check(stored.includes(alpha) && stored.includes(beta), `${path.basename(file)} does not hold both entities`);
  await sleep(200);
  check(updates.A.length === 0, `A never subscribed but got ${updates.A.length} resource update(s)`);
  log(`the graph file holds both; A, not subscribed, got no updates`);
});
