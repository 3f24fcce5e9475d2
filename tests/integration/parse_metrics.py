"""Parse Prometheus text (format 0.0.4) with the Prometheus client library's own parser, and
print its families and samples as one JSON object for the integration tests:

    {"families": [{"name", "type", "help", "samples": [{"name", "labels", "value"}]}]}

Usage: /usr/bin/python3 parse_metrics.py FILE. Exits 1, saying why on stderr, when the text is
not what a scraper and node_exporter's textfile collector accept: a family whose samples are
not together under one HELP and TYPE, a sample outside a typed family, a value that is not a
finite number, a missing final newline.
"""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def structure_problems(text):
    """What the library's lax parser lets through but the text format does not allow."""
    problems = []
    if text and not text.endswith("\n"):
        problems.append("the text does not end with a newline")
    seen_types = set()
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# TYPE "):
            name = line.split()[2]
            if name in seen_types:
                problems.append(f"line {number}: a second TYPE line for {name}")
            seen_types.add(name)
    return problems


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    problems = structure_problems(text)
    families = []
    for family in text_string_to_metric_families(text):
        if family.type in ("untyped", "unknown"):
            problems.append(f"samples of {family.name} outside a typed family")
        samples = []
        for sample in family.samples:
            if not math.isfinite(sample.value):
                problems.append(f"{sample.name} {sample.labels} has the value {sample.value}")
                continue
            samples.append({"name": sample.name, "labels": sample.labels, "value": sample.value})
        families.append({"name": family.name, "type": family.type,
                         "help": family.documentation, "samples": samples})
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(json.dumps({"families": families}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
