#!/usr/bin/env python3
"""Passes `cargo test` output through and, after each test binary's result line, says how long
that binary ran, so a slow one stands out in a CI log:

    test result: ok. 9 passed; 0 failed; ... finished in 301.2s
    binary tests/lifecycle.rs: 302 s

(cargo's own "finished in" counts the test bodies; this counts from the binary's start.)
A summary, slowest first, closes the output.
"""

import re
import sys
import time

# "Running tests/lifecycle.rs (target/debug/deps/lifecycle-0123abcd)", or "Running unittests
# src/lib.rs (target/debug/deps/waiter-0123abcd)": named by the file, and the crate for unittests.
running = re.compile(r"^\s*Running (unittests )?(\S+)(?: \(\S*/([^/]+?)(?:-[0-9a-f]+)?\))?")
started, name, took = None, None, []
for line in sys.stdin:
    sys.stdout.write(line)
    m = running.match(line)
    if m:
        unittests, path, crate = m.groups()
        started, name = time.monotonic(), (f"{crate} {path}" if unittests and crate else path)
    elif line.startswith("test result:") and started is not None:
        seconds = time.monotonic() - started
        took.append((seconds, name))
        sys.stdout.write(f"binary {name}: {seconds:.0f} s\n")
        started = None
    sys.stdout.flush()
if took:
    slowest = ", ".join(f"{n} {s:.0f} s" for s, n in sorted(took, reverse=True)[:8])
    sys.stdout.write(f"slowest binaries: {slowest}\n")
