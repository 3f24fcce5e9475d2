#!/usr/bin/python3
"""CPU per forwarded line (figure 2 of docs/PERFORMANCE.md) of two builds, taken in one run:
through a server's socket session and through a group session; with --http, figure 2b instead:
mcpd's CPU per round trip through an HTTP session, and that over a socket session's in the same
round (the figure's ratio).

    tests/bench/before_after.py [--http] BENCH BEFORE_BIN_DIR AFTER_BIN_DIR [ROUNDS]

BENCH is an mcpd-bench binary; each bin dir holds the mcpd, mcpctl, demo server and relay of
one build. The two are run in turn, ROUNDS times each (default 10), so that a change in the
machine's load falls on both. The report gives, per session count, each build's median and the
median of the after/before ratios of the runs taken side by side, with their middle half (a
spread that holds 1.00 says the two cannot be told apart). Nothing is judged: it prints the
figures.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def rounds_of(bench, bin_dir, out, figure):
    """The rounds of one figure of one quick run of the bench."""
    subprocess.run([bench, "--bin-dir", bin_dir, "--quick", "--only", figure, "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)["figures"][figure]["rounds"]


def one_http_run(bench, bin_dir, out):
    rounds = rounds_of(bench, bin_dir, out, "http")
    figures = {}
    for r in rounds:
        for sessions, pair in r.items():
            figures.setdefault(("http", sessions), []).append(
                pair["http"]["mcpd_cpu_us_per_round_trip"])
            figures.setdefault(("http ÷ socket", sessions), []).append(pair["ratio_cpu"])
    return figures


def one_run(bench, bin_dir, out, http=False):
    if http:
        return one_http_run(bench, bin_dir, out)
    rounds = rounds_of(bench, bin_dir, out, "throughput")
    figures = {}
    for r in rounds:
        for sessions, pair in r.items():
            if not isinstance(pair, dict):
                continue
            for kind in ("mcpd", "mcpd_group"):
                if kind in pair:
                    figures.setdefault((kind, sessions), []).append(
                        pair[kind]["middle_cpu_us_per_line"])
    return figures


def main():
    args = sys.argv[1:]
    http = bool(args) and args[0] == "--http"
    if http:
        args = args[1:]
    if len(args) not in (3, 4):
        print(__doc__.strip().splitlines()[5].strip(), file=sys.stderr)
        return 2
    bench, before, after = args[:3]
    rounds = int(args[3]) if len(args) == 4 else 10
    samples = {"before": {}, "after": {}}
    ratios = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        for _ in range(rounds):
            run = {label: one_run(bench, bin_dir, out, http)
                   for label, bin_dir in (("before", before), ("after", after))}
            for label, figures in run.items():
                for sessions, values in figures.items():
                    samples[label].setdefault(sessions, []).extend(values)
            for sessions, values in run["before"].items():
                b = statistics.median(values)
                a = statistics.median(run["after"][sessions])
                ratios.setdefault(sessions, []).append(a / b)
    unit = "µs/round trip (÷ a socket session's)" if http else "µs/line"
    print(f"| session | sessions | before {unit} | after {unit} | after/before, paired "
          "| middle half |")
    print("|---|---|---|---|---|---|")
    for key in sorted(samples["before"], key=lambda k: (k[0], int(k[1]))):
        kind, sessions = key
        b = statistics.median(samples["before"][key])
        a = statistics.median(samples["after"][key])
        q = statistics.quantiles(ratios[key], n=4)
        label = {"mcpd_group": "group", "mcpd": "socket"}.get(kind, kind)
        print(f"| {label} | {sessions} | {b:.3f} | {a:.3f} | {statistics.median(ratios[key]):.3f} "
              f"| {q[0]:.3f} to {q[2]:.3f} |")
    print(f"\n{rounds} runs of each build, in turn (medians of all their rounds).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
