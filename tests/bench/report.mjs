// The Markdown report of a benchmark run (tests/bench/run.sh): every figure against its target,
// then the details. Only formats what mcpd-bench, peers.mjs, lazy.mjs and http.mjs measured.
//
//   node report.mjs [--command TEXT] CORE.json [PEERS.json...]  report on stdout
//                                                   (PEERS: peers.mjs, lazy.mjs, http.mjs)
//   node report.mjs --update DOC.md REPORT.md                    put REPORT.md into DOC.md
//
// With --update, the text between the lines "<!-- bench:results:begin -->" and
// "<!-- bench:results:end -->" of DOC.md is replaced.

import fs from 'node:fs';

const args = process.argv.slice(2);

if (args[0] === '--update') {
  const [, docPath, reportPath] = args;
  const doc = fs.readFileSync(docPath, 'utf8');
  const begin = '<!-- bench:results:begin -->';
  const end = '<!-- bench:results:end -->';
  const from = doc.indexOf(begin);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) {
    process.stderr.write(`report: ${docPath} has no ${begin} ... ${end} block\n`);
    process.exit(1);
  }
  const report = fs.readFileSync(reportPath, 'utf8').trim();
  fs.writeFileSync(docPath, `${doc.slice(0, from + begin.length)}\n${report}\n${doc.slice(to)}`);
  process.exit(0);
}

let command = './dev bench';
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--command') command = args[++i];
  else files.push(args[i]);
}
const core = JSON.parse(fs.readFileSync(files[0], 'utf8'));
// The npm figures may come in several files (run.sh takes the latency once more, pinned).
const peerRuns = files.slice(1).map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
const peersRun = peerRuns[0] ?? null;
const F = core.figures ?? {};
const P = {};
for (const run of peerRuns) {
  for (const [name, figure] of Object.entries(run.figures ?? {})) {
    P[name === 'peers_latency' && figure.pinned ? 'peers_latency_pinned' : name] = figure;
  }
}

const out = [];
const line = (text = '') => out.push(text);
const fmt = (v, digits = 1) => (v === null || v === undefined || Number.isNaN(v) ? '—' : Number(v).toFixed(digits));
const x = (v) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : `${Number(v).toFixed(2)}×`);
const met = (ok) => (ok === null || ok === undefined ? '—' : ok ? 'yes' : '**no**');
const mib = (kib) => fmt(kib / 1024, 1);
const get = (object, ...keys) => keys.reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), object);

function table(header, rows) {
  line(`| ${header.join(' | ')} |`);
  line(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) line(`| ${row.join(' | ')} |`);
  line();
}

// --- the run ---

const m = core.machine ?? {};
line(`Measured ${core.date} with \`${command}\` (profile ${core.profile}, ${core.rounds} rounds per figure;`);
line(`each figure is the median over the rounds of a value taken side by side with its reference).`);
line();
table(
  ['machine', ''],
  [
    ['CPU', `${m.cpu} (${m.cores} cores as the kernel sees them)`],
    ['kernel', m.kernel],
    ['load average (1, 5, 15 min) at start', (m.load_at_start ?? []).map((v) => fmt(v, 2)).join(', ')],
    ['load average (1 min) at end', fmt(core.load_at_end, 2)],
    ['CPU time from', core.cpu_time_source],
    [
      'simdjson',
      `${get(core, 'simdjson', 'version')}: runtime kernel \`${get(core, 'simdjson', 'active_implementation')}\`, on-demand compiled for \`${get(core, 'simdjson', 'builtin_implementation')}\``,
    ],
    ...(peersRun
      ? [['npm software', Object.entries(peersRun.versions ?? {}).map(([k, v]) => `${k} ${v}`).join(', ')]]
      : []),
  ],
);

// --- against the targets ---

const rows = [];
const lat = get(F, 'latency', 'pinned', 'summary');
if (lat) {
  const r1 = lat.ratio_attach_vs_relay.p50_us;
  rows.push(['1', 'echo round trip p50, mcpd attach vs relay (1 hop), pinned', `${fmt(lat.mcpd_attach.p50_us)} µs`, `${fmt(lat.relay.p50_us)} µs`, x(r1), '≤ 1.2×', met(r1 <= 1.2)]);
  const r2 = lat.ratio_connect_vs_relay_2hop.p50_us;
  rows.push(['1', 'echo round trip p50, `mcpctl connect` vs relay (2 hops), pinned', `${fmt(lat.mcpctl_connect.p50_us)} µs`, `${fmt(lat.relay_2hop.p50_us)} µs`, x(r2), '≤ 1.2×', met(r2 <= 1.2)]);
  const r3 = lat.ratio_attach_vs_relay.p99_us;
  rows.push(['1', 'echo round trip p99, mcpd attach vs relay, pinned', `${fmt(lat.mcpd_attach.p99_us)} µs`, `${fmt(lat.relay.p99_us)} µs`, x(r3), '≤ 1.2×', met(r3 <= 1.2)]);
}
const tp = get(F, 'throughput', 'summary');
if (tp) {
  for (const [s, v] of Object.entries(tp)) {
    rows.push(['2', `CPU per forwarded line, ${s} session${s === '1' ? '' : 's'}`, `${fmt(v.mcpd.middle_cpu_us_per_line, 2)} µs`, `${fmt(v.relay.middle_cpu_us_per_line, 2)} µs`, x(v.ratio_cpu_per_line), '≤ 1.5×', met(v.ratio_cpu_per_line <= 1.5)]);
  }
  for (const [s, v] of Object.entries(tp)) {
    if (!v.mcpd_group) continue;
    rows.push(['2', `CPU per forwarded line through a group session, ${s} session${s === '1' ? '' : 's'} (reference: a socket session)`, `${fmt(v.mcpd_group.middle_cpu_us_per_line, 2)} µs`, `${fmt(v.mcpd.middle_cpu_us_per_line, 2)} µs`, x(v.ratio_group_cpu_per_line), '≤ 1.3×', met(v.ratio_group_cpu_per_line <= 1.3)]);
  }
  const most = Object.keys(tp).sort((a, b) => Number(b) - Number(a))[0];
  const busiest = tp[most];
  if (busiest?.mcpd?.lines_per_cpu_s) {
    rows.push(['2', `lines one core forwards per second of CPU (at saturation), ${most} sessions`, fmt(busiest.mcpd.lines_per_cpu_s, 0), fmt(busiest.relay.lines_per_cpu_s, 0), x(busiest.ratio_lines_per_cpu_s), '≥ 0.7×', met(busiest.ratio_lines_per_cpu_s >= 0.7)]);
  }
}
const httpCpu = get(F, 'http', 'summary');
if (httpCpu) {
  for (const [s, v] of Object.entries(httpCpu)) {
    rows.push(['2b', `mcpd CPU per round trip through an HTTP session, ${s} session${s === '1' ? '' : 's'}, one request in flight each (reference: a socket session)`, `${fmt(v.http_cpu_us_per_round_trip, 2)} µs`, `${fmt(v.socket_cpu_us_per_round_trip, 2)} µs`, x(v.ratio_cpu), '≤ 1.3×', met(v.ratio_cpu <= 1.3)]);
  }
}
const large = get(F, 'large', 'summary');
if (large) {
  for (const [size, v] of Object.entries(large)) {
    rows.push(['3', `CPU per MiB, ${size} MiB result`, `${fmt(v.mcpd.cpu_ms_per_mib, 2)} ms`, `${fmt(v.relay.cpu_ms_per_mib, 2)} ms`, x(v.ratio_cpu), '≤ 2.5×', met(v.ratio_cpu <= 2.5)]);
  }
  for (const [size, v] of Object.entries(large)) {
    rows.push(['3', `peak RSS above idle, ${size} MiB result (× the size)`, `${mib(v.mcpd.peak_above_idle_kib)} MiB`, `${mib(v.relay.peak_above_idle_kib)} MiB`, x(v.mcpd.peak_above_idle_x_size), '≤ 3× the size', met(v.mcpd.peak_above_idle_x_size <= 3)]);
  }
}
const scale = F.scale;
if (scale && !scale.error) {
  rows.push(['4', 'RSS per idle session (socket attach)', `${fmt(scale.socket_sessions.rss_kib_per_item)} KiB`, `${fmt(scale.relay_connections.rss_kib_per_item)} KiB`, '', '≤ 16 KiB', met(scale.socket_sessions.rss_kib_per_item <= 16)]);
  rows.push(['4', 'RSS per idle session (passed pipes, as `mcpctl connect`)', `${fmt(scale.fd_sessions.rss_kib_per_item)} KiB`, '', '', '≤ 16 KiB', met(scale.fd_sessions.rss_kib_per_item <= 16)]);
  rows.push(['4', 'idle `mcpctl connect`: RSS (private)', `${mib(scale.mcpctl_connect.rss_kib)} MiB (${fmt(scale.mcpctl_connect.private_kib, 0)} KiB)`, '', '', '≤ 2 MiB RSS', met(scale.mcpctl_connect.rss_kib <= 2048)]);
}
const agents = get(P, 'agents', 'summary');
if (agents) {
  rows.push(['5', `${P.agents.agents} agents on server-everything: total RSS, mcpd vs direct`, `${mib(agents.mcpd.rss_kib)} MiB`, `${mib(agents.direct.rss_kib)} MiB`, x(agents.ratio_rss_kib), '≤ 0.2×', met(agents.ratio_rss_kib <= 0.2)]);
  rows.push(['5', 'same, total PSS', `${mib(agents.mcpd.pss_kib)} MiB`, `${mib(agents.direct.pss_kib)} MiB`, x(agents.ratio_pss_kib), '≤ 0.2×', met(agents.ratio_pss_kib <= 0.2)]);
}
const peerLatency = P.peers_latency_pinned ?? P.peers_latency;
if (peerLatency && peerLatency.summary) {
  const s = peerLatency.summary;
  const peerLabels = Object.keys(s).filter((k) => k !== 'direct' && k !== 'mcpd');
  const best = peerLabels.reduce((b, k) => (b === null || s[k].added_p50_us < s[b].added_p50_us ? k : b), null);
  const own = s.mcpd.added_p50_us;
  const ratio = best && own > 0 ? s[best].added_p50_us / own : null;
  const how = peerLatency.pinned ? 'pinned' : 'unpinned';
  rows.push(['6', `added latency p50 over direct stdio (SDK client), best peer (${best}) vs mcpd, ${how}`, `${fmt(own, 0)} µs`, `${fmt(best ? s[best].added_p50_us : null, 0)} µs`, ratio === null ? '—' : `${fmt(ratio, 0)}× lower`, '≥ 20× lower', met(ratio === null ? null : ratio >= 20)]);
}
line('### Against the targets');
line();
table(['#', 'figure', 'mcpd', 'reference', 'ratio', 'target', 'met'], rows);
line('Reference: the minimal relay (figures 1-4), eight direct servers (5), the best peer (6).');
line();

// --- details ---

if (F.latency && !F.latency.error) {
  line('### 1. Latency (sequential tools/call echo, µs)');
  line();
  for (const mode of ['pinned', 'unpinned']) {
    const s = get(F, 'latency', mode, 'summary');
    if (!s) continue;
    line(mode === 'pinned' ? 'Every process on one CPU (the sum of the work on the path):' : 'As the scheduler places them (on this VM it flips between two placements up to 3× apart, per process):');
    line();
    table(
      ['path', 'p50', 'p99', 'CPU of the processes in between, per round trip'],
      [
        ['direct pipe', fmt(s.direct.p50_us), fmt(s.direct.p99_us), '—'],
        ['minimal relay (1 hop)', fmt(s.relay.p50_us), fmt(s.relay.p99_us), fmt(s.relay.middle_cpu_us)],
        ['minimal relay (2 hops: stdio bridge + relay)', fmt(s.relay_2hop.p50_us), fmt(s.relay_2hop.p99_us), fmt(s.relay_2hop.middle_cpu_us)],
        ['mcpd, attach on the socket', fmt(s.mcpd_attach.p50_us), fmt(s.mcpd_attach.p99_us), fmt(s.mcpd_attach.middle_cpu_us)],
        ['mcpd, `mcpctl connect`', fmt(s.mcpctl_connect.p50_us), fmt(s.mcpctl_connect.p99_us), fmt(s.mcpctl_connect.middle_cpu_us)],
      ],
    );
  }
}
if (tp) {
  line(`### 2. Throughput (echo, ${get(F, 'throughput', 'pipeline_depth')} in flight per session, ${get(F, 'throughput', 'messages_per_measure')} per measure)`);
  line();
  table(
    ['sessions', 'relay msg/s', 'mcpd msg/s', 'relay CPU µs/line', 'mcpd CPU µs/line', 'ratio', 'mcpd group msg/s', 'group CPU µs/line', 'group ÷ socket', 'server CPU µs/msg (via mcpd)', 'misrouted'],
    Object.entries(tp).map(([s, v]) => [s, fmt(v.relay.messages_per_s, 0), fmt(v.mcpd.messages_per_s, 0), fmt(v.relay.middle_cpu_us_per_line, 2), fmt(v.mcpd.middle_cpu_us_per_line, 2), x(v.ratio_cpu_per_line), v.mcpd_group ? fmt(v.mcpd_group.messages_per_s, 0) : '—', v.mcpd_group ? fmt(v.mcpd_group.middle_cpu_us_per_line, 2) : '—', v.mcpd_group ? x(v.ratio_group_cpu_per_line) : '—', fmt(v.mcpd.server_cpu_us_per_message, 2), `${v.mcpd.misrouted + v.relay.misrouted + (v.mcpd_group?.misrouted ?? 0)}`]),
  );
}
if (large) {
  line(`### 3. Large results (max_message_bytes ${get(F, 'large', 'max_message_bytes')})`);
  line();
  table(
    ['size', 'relay ms/MiB', 'mcpd ms/MiB', 'ratio', 'page faults per MiB (relay, mcpd)', 'relay peak above idle', 'mcpd peak above idle', 'mcpd RSS kept after it (above idle)'],
    Object.entries(large).map(([size, v]) => [
      `${size} MiB`,
      fmt(v.relay.cpu_ms_per_mib, 2),
      fmt(v.mcpd.cpu_ms_per_mib, 2),
      x(v.ratio_cpu),
      `${fmt(v.relay.minor_faults_per_mib, 0)}, ${fmt(v.mcpd.minor_faults_per_mib, 0)}`,
      `${mib(v.relay.peak_above_idle_kib)} MiB (${x(v.relay.peak_above_idle_x_size)})`,
      `${mib(v.mcpd.peak_above_idle_kib)} MiB (${x(v.mcpd.peak_above_idle_x_size)})`,
      `${mib(v.mcpd.retained_kib)} MiB`,
    ]),
  );
}
if (scale && !scale.error) {
  line('### 4. Scale and memory');
  line();
  table(
    ['what', 'RSS before', 'RSS after', 'per item (RSS)', 'per item (private)'],
    [
      [`mcpd, 1 → ${scale.servers.servers} configured servers`, `${mib(scale.servers.rss_before_kib)} MiB`, `${mib(scale.servers.rss_after_kib)} MiB`, `${fmt(scale.servers.rss_kib_per_item)} KiB`, `${fmt(scale.servers.private_kib_per_item)} KiB`],
      [`mcpd, ${scale.socket_sessions.items} idle sessions (socket)`, `${mib(scale.socket_sessions.rss_before_kib)} MiB`, `${mib(scale.socket_sessions.rss_after_kib)} MiB`, `${fmt(scale.socket_sessions.rss_kib_per_item)} KiB`, `${fmt(scale.socket_sessions.private_kib_per_item)} KiB`],
      [`mcpd, ${scale.fd_sessions.items} idle sessions (passed pipes)`, `${mib(scale.fd_sessions.rss_before_kib)} MiB`, `${mib(scale.fd_sessions.rss_after_kib)} MiB`, `${fmt(scale.fd_sessions.rss_kib_per_item)} KiB`, `${fmt(scale.fd_sessions.private_kib_per_item)} KiB`],
      [`relay, ${scale.relay_connections.items} idle connections`, `${mib(scale.relay_connections.rss_before_kib)} MiB`, `${mib(scale.relay_connections.rss_after_kib)} MiB`, `${fmt(scale.relay_connections.rss_kib_per_item)} KiB`, `${fmt(scale.relay_connections.private_kib_per_item)} KiB`],
      [`idle \`mcpctl connect\` (median of ${scale.mcpctl_connect.bridges})`, '', `${fmt(scale.mcpctl_connect.rss_kib, 0)} KiB`, `PSS ${fmt(scale.mcpctl_connect.pss_kib, 0)} KiB`, `${fmt(scale.mcpctl_connect.private_kib, 0)} KiB`],
    ],
  );
}
const box = F.sandbox;
if (box && !box.error) {
  line('### 5. A server\'s start with and without its sandbox');
  line();
  line(`\`restart\` with \`wait\` of the demo server, ${box.starts_per_round} a round, median of the rounds' medians; boxed: \`preset = "project"\`, \`network = "none"\`, \`memory\`, \`open_files\`, enforced as: ${(box.sandbox?.enforced ?? []).join('; ')}.`);
  line();
  table(
    ['set-up', 'start (p50)', 'ratio'],
    [
      ['plain', `${fmt(box.plain_p50_ms, 2)} ms`, ''],
      ['boxed', `${fmt(box.boxed_p50_ms, 2)} ms`, x(box.ratio)],
    ],
  );
}
const up = F.upgrade;
if (up && !up.error) {
  line('### 9. Upgrades in place under load');
  line();
  line(`${up.sessions} sessions (on the socket, on passed pipes, and ${up.http_sessions ?? 0} over HTTP) pipelining echo calls, ${up.pipeline_depth} in flight each, through ${up.upgrades} upgrades in place: ${up.answered} answered, ${up.misrouted} misrouted.`);
  line();
  table(
    ['figure', 'median', 'max'],
    [
      ['silence of the whole pool across an upgrade', `${fmt(up.summary.silence_ms_median)} ms`, `${fmt(up.summary.silence_ms_max)} ms`],
      ['`upgrade` answered (the state checked)', `${fmt(up.summary.request_ms_median)} ms`, ''],
      ['until the new process serves', `${fmt(up.summary.until_served_ms_median)} ms`, ''],
      ['state', `${fmt(up.summary.state_bytes_median / 1024)} KiB`, ''],
    ],
  );
}
const cg = F.callgrind;
if (cg && !cg.error && !cg.skipped) {
  line('### Instructions (callgrind; the difference of two runs, so start-up cancels out)');
  line();
  table(
    ['work', 'mcpd', 'relay', 'ratio'],
    [
      ['echo round trip', fmt(cg.echo.mcpd, 0), fmt(cg.echo.relay, 0), x(cg.echo.ratio)],
      ...(cg.echo_64
        ? [[`echo round trip, ${cg.echo_64.sessions} sessions pipelining (${cg.echo_64.pipeline_depth ?? 8} in flight each)`, fmt(cg.echo_64.mcpd, 0), fmt(cg.echo_64.relay, 0), x(cg.echo_64.ratio)]]
        : []),
      ['per MiB of a 1 MiB result', fmt(cg.large_1mib.mcpd, 0), fmt(cg.large_1mib.relay, 0), x(cg.large_1mib.ratio)],
      ['per MiB of a 16 MiB result', fmt(cg.large_16mib.mcpd, 0), fmt(cg.large_16mib.relay, 0), x(cg.large_16mib.ratio)],
    ],
  );
  if (cg.echo_group && cg.echo_http) {
    table(
      ['echo round trip through', 'mcpd', 'a socket session', 'ratio'],
      [
        ['a group session (two members, calls prefixed)', fmt(cg.echo_group.mcpd, 0), fmt(cg.echo_group.socket, 0), x(cg.echo_group.ratio_to_socket)],
        ['an HTTP session (2025-06-18, JSON answers, one kept-alive connection)', fmt(cg.echo_http.mcpd, 0), fmt(cg.echo_http.socket, 0), x(cg.echo_http.ratio_to_socket)],
      ],
    );
  }
  for (const [key, title] of [
    ['echo', 'mcpd, instructions per echo round trip by function (self)'],
    ['echo_64', 'mcpd, instructions per echo round trip with 64 sessions pipelining by function (self)'],
    ['echo_group', 'mcpd, instructions per echo round trip through a group session by function (self)'],
    ['echo_http', 'mcpd, instructions per echo round trip through an HTTP session by function (self)'],
    ['large_16mib', 'mcpd, instructions per MiB of a 16 MiB result by function (self)'],
  ]) {
    if (!cg[key]) continue;
    line(`${title}:`);
    line();
    line('```');
    for (const row of cg[key].mcpd_profile.split('\n').filter(Boolean).slice(0, 12)) line(row.replace(/\s*\[[^\]]*\]\s*$/, ''));
    line('```');
    line();
  }
}
if (agents) {
  line(`### 5. ${P.agents.agents} agents on server-everything`);
  line();
  const names = (n) => Object.entries(n ?? {}).map(([k, v]) => `${v} ${k}`).join(', ');
  table(
    ['set-up', 'processes', 'RSS', 'PSS', 'private'],
    [
      [`direct (${names(agents.direct.names)})`, fmt(agents.direct.processes, 0), `${mib(agents.direct.rss_kib)} MiB`, `${mib(agents.direct.pss_kib)} MiB`, `${mib(agents.direct.private_kib)} MiB`],
      [`through mcpd (${names(agents.mcpd.names)})`, fmt(agents.mcpd.processes, 0), `${mib(agents.mcpd.rss_kib)} MiB`, `${mib(agents.mcpd.pss_kib)} MiB`, `${mib(agents.mcpd.private_kib)} MiB`],
    ],
  );
}
const load = P.peers_load;
if (peerLatency || load) {
  line('### 6. Peers: the same server-everything behind each');
  line();
  for (const [title, lat] of [
    ['Latency of an SDK client calling echo (µs), every process on one CPU:', P.peers_latency_pinned],
    ['The same, unpinned:', P.peers_latency],
  ]) {
    if (!lat?.summary) continue;
    line(title);
    line();
    const s = lat.summary;
    table(
      ['set-up', 'p50', 'p99', 'added p50'],
      Object.keys(s).map((label) => [label, fmt(s[label].p50_us, 0), fmt(s[label].p99_us, 0), label === 'direct' ? '—' : fmt(s[label].added_p50_us, 0)]),
    );
  }
  if (load) {
    line(`Load and memory, ${load.load.mcpd?.clients ?? '?'} clients each keeping ${load.load.mcpd?.window ?? '?'} echo calls in flight:`);
    line();
    const mcpdRate = load.load.mcpd?.summary?.calls_per_s;
    table(
      ['set-up', 'calls/s', 'mcpd calls/s ÷ this', 'wrong or failed', 'processes (server side + stdio)', 'RSS MiB (server side + stdio)', 'PSS MiB (total)'],
      Object.entries(load.load).map(([label, r]) => {
        const l = r.summary;
        const mem = r.memory;
        return [
          label,
          l ? fmt(l.calls_per_s, 0) : 'failed',
          l && mcpdRate ? x(mcpdRate / l.calls_per_s) : '—',
          l ? `${l.mismatched + l.failed}` : '—',
          mem ? `${mem.server.processes} + ${mem.client_side.processes}` : '—',
          mem ? `${mib(mem.server.rss_kib)} + ${mib(mem.client_side.rss_kib)}` : '—',
          mem ? mib(mem.server.pss_kib + mem.client_side.pss_kib) : '—',
        ];
      }),
    );
    const checkRows = [];
    for (const [label, c] of Object.entries(load.checks ?? {})) {
      for (const [name, r] of Object.entries(c)) checkRows.push([label, name.replace('_', ' '), r.pass ? 'pass' : '**fail**', r.detail.replace(/\|/g, '/').replace(/\n/g, ' ')]);
    }
    table(['set-up', 'check', 'result', 'detail'], checkRows);
  }
  const notes = [peerLatency?.note, load?.note].filter(Boolean);
  if (notes.length > 0) line(`${[...new Set(notes)].join('; ')}.`);
  line();
}
const lazyAttach = P.lazy_attach;
const lazyMemory = P.lazy_memory;
if (lazyAttach || lazyMemory) {
  line('### 7. Lazy servers');
  line();
  const ms = (v) => `${fmt(v, 1)} ms`;
  if (lazyAttach?.summary) {
    const s = lazyAttach.summary;
    const a = lazyAttach.asleep;
    line(`From an SDK client creating its stdio transport to its \`listTools()\` answer (\`initialize\` included), ${lazyAttach.rounds} attaches each, in turns:`);
    line();
    table(
      ['set-up', 'median', 'p90', 'fastest', 'median vs direct'],
      [
        ['`mcpctl connect` to a lazy server-everything, asleep (answered from its cache)', ms(s.lazy.median_ms), ms(s.lazy.p90_ms), ms(s.lazy.min_ms), s.lazy.median_ms > 0 ? `${fmt(s.direct.median_ms / s.lazy.median_ms, 0)}× sooner` : '—'],
        ['server-everything started by the client (direct stdio)', ms(s.direct.median_ms), ms(s.direct.p90_ms), ms(s.direct.min_ms), '—'],
      ],
    );
    line(
      `The lazy server stayed asleep throughout: ${a.pass ? 'yes' : '**no**'} (state ${a.state}, pid ${a.pid}, no exit since mcpd started: ${a.last_exit === null ? 'yes' : 'no'}, ` +
        `${a.answered_from_cache_after - a.answered_from_cache_before} requests answered from the cache). ` +
        `The cached list has ${lazyAttach.tools.lazy} tools, the direct client is listed ${lazyAttach.tools.direct}: server-everything adds some for clients that declare roots, sampling or elicitation, as mcpd's handshake does.`,
    );
    line();
  }
  if (lazyMemory?.summary) {
    const s = lazyMemory.summary;
    const n = lazyMemory.servers;
    const procs = s.running.server_processes;
    line(`Memory with ${n} \`mcpd-demo-server\` entries, each set-up a fresh mcpd read ${fmt((lazyMemory.settle_ms ?? 2000) / 1000, 0)} s after it answers (median of ${lazyMemory.rounds.length} round${lazyMemory.rounds.length === 1 ? '' : 's'}):`);
    line();
    table(
      ['set-up', 'server processes', 'mcpd RSS', 'mcpd peak (VmHWM)', 'mcpd PSS', 'server processes RSS (PSS)'],
      [
        ['1 server, not started', '0', `${mib(s.one.rss_kib)} MiB`, `${mib(s.one.hwm_kib)} MiB`, `${mib(s.one.pss_kib)} MiB`, '—'],
        [`${n} servers, not lazy, \`autostart = false\` (no cache)`, '0', `${mib(s.configured.rss_kib)} MiB`, `${mib(s.configured.hwm_kib)} MiB`, `${mib(s.configured.pss_kib)} MiB`, '—'],
        [`${n} lazy servers asleep, catalogs loaded from the cache files`, '0', `${mib(s.lazy.rss_kib)} MiB`, `${mib(s.lazy.hwm_kib)} MiB`, `${mib(s.lazy.pss_kib)} MiB`, '—'],
        [`${n} servers running (not lazy, autostart)`, fmt(procs.processes, 0), `${mib(s.running.rss_kib)} MiB`, `${mib(s.running.hwm_kib)} MiB`, `${mib(s.running.pss_kib)} MiB`, `${mib(procs.rss_kib)} MiB (${mib(procs.pss_kib)} MiB)`],
      ],
    );
    line(
      `A sleeping server costs mcpd ${fmt(s.lazy_above_one_kib_per_server)} KiB RSS (above one server; ${fmt(s.lazy_above_configured_kib_per_server)} KiB above the same entries without a cache); ` +
        `a running \`mcpd-demo-server\` ${fmt(s.running_kib_per_server, 0)} KiB RSS, ${fmt(procs.pss_kib / n, 0)} KiB PSS. ` +
        `Filling the ${lazyMemory.fill.cache_files} caches (\`mcpctl warm\`, ${lazyMemory.batch ?? '?'} at a time) took ${fmt(lazyMemory.fill.seconds)} s (mcpd's peak meanwhile ${mib(lazyMemory.fill.mcpd_hwm_kib)} MiB); they hold ${fmt(lazyMemory.fill.cache_bytes / 1024, 0)} KiB on disk.`,
    );
    line();
  }
  for (const [name, figure] of [['attach', lazyAttach], ['memory', lazyMemory]]) {
    if (figure?.error) {
      line(`Figure 7 (${name}) failed: ${figure.error.split('\n')[0]}`);
      line();
    }
  }
}
const httpLatency = P.http_latency;
const httpLoad = P.http_load;
if (httpLatency || httpLoad) {
  line('### 8. HTTP front door: added latency');
  line();
  const us = (v) => fmt(v, 0);
  if (httpLatency?.summary) {
    const s = httpLatency.summary;
    line(`An SDK client calling \`echo\` on \`mcpd-demo-server\` (µs), ${httpLatency.calls_per_round} sequential calls per set-up and round after ${httpLatency.warmup} unmeasured, in turns of ${httpLatency.chunk}; median over ${httpLatency.rounds.length} round${httpLatency.rounds.length === 1 ? '' : 's'}:`);
    line();
    table(
      ['set-up', 'p50', 'p99', 'added p50', 'added p99'],
      Object.keys(s).map((label) => [label, us(s[label].p50_us), us(s[label].p99_us), label === 'direct' ? '—' : us(s[label].added_p50_us), label === 'direct' ? '—' : us(s[label].added_p99_us)]),
    );
  }
  if (httpLoad?.summary) {
    const s = httpLoad.summary;
    line(`${httpLoad.clients} clients per set-up, each one call at a time, ${fmt(httpLoad.seconds, 1)} s per measure (median over ${httpLoad.rounds.length} round${httpLoad.rounds.length === 1 ? '' : 's'}):`);
    line();
    table(
      ['set-up', 'calls/s', 'CPU per call, all but the client (µs)', 'added CPU per call (µs)', 'wrong or failed'],
      Object.keys(s).map((label) => [label, fmt(s[label].calls_per_s, 0), us(s[label].cpu_us_per_call), label === 'direct' ? '—' : us(s[label].added_cpu_us_per_call), `${s[label].wrong}`]),
    );
  }
  const notes = [httpLatency?.note, httpLoad?.note].filter(Boolean);
  if (notes.length > 0) {
    line(`${[...new Set(notes)].join('; ')}.`);
    line();
  }
  for (const [name, figure] of [['latency', httpLatency], ['load', httpLoad]]) {
    if (figure?.error) {
      line(`Figure 8 (${name}) failed: ${figure.error.split('\n')[0]}`);
      line();
    }
  }
}
process.stdout.write(`${out.join('\n')}\n`);
