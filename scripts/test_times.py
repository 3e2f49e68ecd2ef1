#!/usr/bin/env python3
"""After an e2e pass: its slowest tests and each test binary's share, from nextest's JUnit report
(`scripts/test_times.py target/nextest/e2e-moto/junit.xml moto`), so a slow test stands out in
a CI log. Each line reads `test 12.3 s  binary::name`; a test's time includes any wait for its
turn on the machine, and the tests of a pass run several at once, so they add up to more than
the pass took. Then, from `target/e2e-turns.tsv` (e2e::turn), how long the pass's tests waited
for their turns, and each test that took the machine alone: its own time and its wait.
"""

import collections
import sys
import xml.etree.ElementTree as ET


def main(path):
    """Prints the report's summary; returns the names of its tests."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"test times: no report at {path} ({e})")
        return set()
    tests = []
    for case in root.iter("testcase"):
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else "ok"
        tests.append((float(case.get("time", 0)), case.get("classname", "?"), case.get("name", "?"), outcome))
    if not tests:
        return set()
    print(f"slowest tests of {path}:")
    for seconds, binary, name, outcome in sorted(tests, reverse=True)[:12]:
        print(f"  test {seconds:6.1f} s  {binary} {name}{'' if outcome == 'ok' else '  (' + outcome + ')'}")
    per_binary = collections.Counter()
    for seconds, binary, _, _ in tests:
        per_binary[binary] += seconds
    total = sum(per_binary.values())
    shares = ", ".join(f"{b} {s:.0f} s" for b, s in per_binary.most_common())
    print(f"test time by binary ({total:.0f} s in all): {shares}")
    return {name for _, _, name, _ in tests}


def turns(backend, tests, path="target/e2e-turns.tsv"):
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(path)]
    except OSError:
        return
    rows = [r for r in rows if len(r) == 5 and r[0] == backend and r[1] in tests]
    if not rows:
        return
    waited = sum(float(r[3]) for r in rows if r[2] == "shared")
    print(f"turns on {backend}: {len(rows)} of these tests; the shared ones waited {waited:.0f} s in all")
    for _, test, kind, wait, held in sorted((r for r in rows if r[2] == "alone"), key=lambda r: -float(r[4])):
        print(f"  alone {float(held):6.1f} s  {test} (waited {float(wait):.0f} s)")


if __name__ == "__main__":
    names = main(sys.argv[1])
    if len(sys.argv) > 2:
        turns(sys.argv[2], names)
