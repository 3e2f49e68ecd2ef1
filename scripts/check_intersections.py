#!/usr/bin/env python3
"""Checks docs/intersections.md, the table of where features meet, against the code.

    check_intersections.py [--strict] [--doc PATH]

Fails (exit 1, one line per problem, naming the pair) when:
- a feature in the matrix's header has no row, or a row has no column (same names, same order);
- an upper-triangle cell is empty or names no pair id, an id is used twice, or an id has no
  entry under "## Pairs" (or an entry no cell names, or an entry's features are not its cell's);
- an entry has no bullets, or a bullet is none of the forms below;
- a bullet's `name` is not a `fn name` in any .rs file under crates/ or tests/;
- a bullet's `sim:name` is not a `fn name` under crates/waiter/src/simulation/.
Bullets: "`test_fn` — what it covers", "`sim:fn` — what it covers", "cannot meet: why",
"uncovered: what should be tested". With --strict, every `uncovered:` bullet fails too.
Prints a one-line summary on success.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM_DIR = os.path.join("crates", "waiter", "src", "simulation")
FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
CHECK = re.compile(r"^`(sim:)?([A-Za-z_][A-Za-z0-9_]*)`\s+—\s+\S")
CELL = re.compile(r"^\[P(\d+)\]\(#p(\d+)\)$")
ENTRY = re.compile(r"^###\s+P(\d+):\s+(.+?)\s+×\s+(.+?)\s*$")


def fn_names(*dirs):
    """Every `fn` name in the .rs files under `dirs` (relative to the repository)."""
    names = set()
    for top in dirs:
        for base, subdirs, files in os.walk(os.path.join(ROOT, top)):
            subdirs[:] = [d for d in subdirs if d not in ("target", "node_modules", ".git")]
            for f in files:
                if f.endswith(".rs"):
                    with open(os.path.join(base, f), encoding="utf-8", errors="replace") as fh:
                        names.update(FN.findall(fh.read()))
    return names


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def section(lines, title):
    """The lines under `## title`, up to the next `## ` heading."""
    start = next((i for i, l in enumerate(lines) if l.strip() == f"## {title}"), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def read_matrix(lines, problems):
    """{pair id: (row feature, column feature)} from the matrix, and the features."""
    rows = [l for l in lines if l.lstrip().startswith("|")]
    if len(rows) < 3:
        problems.append("the matrix has no header, separator and rows")
        return {}, []
    header = cells(rows[0])[1:]
    body = [cells(r) for r in rows[2:]]
    features = [r[0] for r in body]
    problems.extend(f"feature {f!r} has a column but no row" for f in header if f not in features)
    problems.extend(f"feature {f!r} has a row but no column" for f in features if f not in header)
    if header != features and set(header) == set(features):
        problems.append("the matrix's rows and columns are not in the same order")
    pairs = {}
    for row in body:
        a = row[0]
        if a not in header:
            continue
        for j, col in enumerate(header):
            if j <= header.index(a):
                continue  # the diagonal and the lower triangle hold no pair
            cell = row[j + 1] if j + 1 < len(row) else ""
            m = CELL.match(cell)
            if not m or m.group(1) != m.group(2):
                problems.append(f"{a} × {col}: the cell {cell!r} names no pair id like [P12](#p12)")
                continue
            pid = int(m.group(1))
            if pid in pairs:
                problems.append(f"P{pid} is in two cells: {' × '.join(pairs[pid])} and {a} × {col}")
            pairs[pid] = (a, col)
    return pairs, header


def read_entries(lines):
    """{pair id: (feature, feature, [bullets])} from the Pairs section."""
    entries, current = {}, None
    for line in lines:
        m = ENTRY.match(line)
        if m:
            current = int(m.group(1))
            entries[current] = (m.group(2), m.group(3), [])
        elif current is not None and line.startswith("- "):
            entries[current][2].append(line[2:].strip())
        elif current is not None and line.startswith("  ") and entries[current][2]:
            entries[current][2][-1] += " " + line.strip()
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strict", action="store_true", help="also fail on `uncovered:` bullets")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "intersections.md"))
    args = ap.parse_args()
    with open(args.doc, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    problems = []
    matrix, pairs_section = section(lines, "Matrix"), section(lines, "Pairs")
    if matrix is None or pairs_section is None:
        sys.exit(f"{args.doc}: needs a '## Matrix' and a '## Pairs' section")
    cells_by_id, features = read_matrix(matrix, problems)
    entries = read_entries(pairs_section)
    tests, sims = fn_names("crates", "tests"), fn_names(SIM_DIR)
    checks, cannot, uncovered = 0, 0, []
    for pid, (a, b) in sorted(cells_by_id.items()):
        if pid not in entries:
            problems.append(f"P{pid} ({a} × {b}): no entry under '## Pairs'")
        elif {entries[pid][0], entries[pid][1]} != {a, b}:
            problems.append(f"P{pid} ({a} × {b}): its entry is headed {entries[pid][0]} × {entries[pid][1]}")
    for pid, (a, b, bullets) in sorted(entries.items()):
        name = f"P{pid} ({a} × {b})"
        if pid not in cells_by_id:
            problems.append(f"{name}: an entry no cell names")
        if not bullets:
            problems.append(f"{name}: the entry has no bullets")
        for bullet in bullets:
            if bullet.startswith("cannot meet:"):
                cannot += 1
            elif bullet.startswith("uncovered:"):
                uncovered.append(f"{name}: {bullet}")
            elif m := CHECK.match(bullet):
                checks += 1
                sim, fn = m.group(1), m.group(2)
                if sim and fn not in sims:
                    problems.append(f"{name}: sim:{fn} is not a fn under {SIM_DIR}/")
                elif not sim and fn not in tests:
                    problems.append(f"{name}: {fn} is not a fn in any .rs file under crates/ or tests/")
            else:
                problems.append(f"{name}: not \"`check` — what\", \"cannot meet: …\" or \"uncovered: …\": {bullet[:60]!r}")
    if args.strict:
        problems.extend(f"--strict: {u}" for u in uncovered)
    if problems:
        print(f"{os.path.relpath(args.doc)}: {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        sys.exit(1)
    print(f"intersections: {len(features)} features, {len(cells_by_id)} pairs, {checks} checks, "
          f"{cannot} cannot meet, {len(uncovered)} uncovered")


if __name__ == "__main__":
    main()
