#!/usr/bin/env python3
"""Draws the operator's dashboard (infra/lib/dashboard.json, the body SAM and CDK deploy) as an
SVG: each widget where CloudWatch places it on its 24-column grid, with its title and what it
plots. No account is needed, so the picture shows the layout and the series, not data.

    render_dashboard.py [OUT]      (default docs/dashboard.svg)

tests/template/test_template.py checks that the committed picture is this script's output.
"""

import json
import os
import re
import sys
from html import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY = os.path.join(ROOT, "infra", "lib", "dashboard.json")
# Values the deployed stack fills in, as in an example deployment.
EXAMPLE = {
    "AWS::Region": "eu-west-1",
    "PollerFunction": "sqs-waiter-PollerFunction",
    "EnqueueFunction": "sqs-waiter-EnqueueFunction",
    "PollerTimeout": "70",
}
COLUMN, ROW, PAD = 40, 34, 8
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def body(text=None):
    """The dashboard body as the deployed stack sees it: Fn::Sub applied with EXAMPLE."""
    if text is None:
        with open(BODY) as f:
            text = f.read()

    return json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: EXAMPLE[m.group(1)], text))


def series(entry):
    """One line of a widget's legend: what an entry of `metrics` plots."""
    if isinstance(entry[0], dict):
        e = entry[0]
        if "SEARCH(" in e.get("expression", ""):
            metric = re.search(r'MetricName="([^"]+)"', e["expression"]).group(1)
            by = " and ".join(re.search(r"\{SqsWaiter,FunctionName,([\w,]+)\}", e["expression"]).group(1).split(","))
            stat = re.search(r"'(\w+)', \d+\)$", e["expression"]).group(1)
            return f"{metric} ({stat}) per {by}"
        return f"{e.get('label', e['id'])} = {e['expression']}"
    namespace, metric = entry[0], entry[1]
    options = entry[-1] if isinstance(entry[-1], dict) else {}
    if options.get("visible") is False:
        return None
    return f"{namespace} {metric} ({options.get('stat', 'Sum')})"


def svg(dashboard):
    widgets = dashboard["widgets"]
    width = 24 * COLUMN + PAD
    height = max(w["y"] + w["height"] for w in widgets) * ROW + PAD
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">',
        f'<rect width="{width}" height="{height}" fill="#f2f3f3"/>',
    ]
    for w in widgets:
        x, y = w["x"] * COLUMN + PAD, w["y"] * ROW + PAD
        wd, ht = w["width"] * COLUMN - PAD, w["height"] * ROW - PAD
        p = w["properties"]
        out.append(f'<rect x="{x}" y="{y}" width="{wd}" height="{ht}" fill="#ffffff" stroke="#d5dbdb"/>')
        out.append(f'<text x="{x + 12}" y="{y + 24}" font-size="15" font-weight="bold" fill="#16191f">'
                   f'{escape(p["title"])}</text>')
        # A plot area with a faint grid and, for an annotated widget, its line.
        px, py, pw, ph = x + 12, y + 38, wd - 24, ht - 110
        out.append(f'<rect x="{px}" y="{py}" width="{pw}" height="{ph}" fill="none" stroke="#eaeded"/>')
        for i in range(1, 4):
            gy = py + i * ph / 4
            out.append(f'<line x1="{px}" y1="{gy:.0f}" x2="{px + pw}" y2="{gy:.0f}" stroke="#eaeded"/>')
        for a in p.get("annotations", {}).get("horizontal", []):
            out.append(f'<line x1="{px}" y1="{py + 8}" x2="{px + pw}" y2="{py + 8}" stroke="#d13212" '
                       f'stroke-dasharray="6 4"/>')
            out.append(f'<text x="{px + pw - 4}" y="{py + 22}" font-size="12" fill="#d13212" '
                       f'text-anchor="end">{escape(a["label"])}: {a["value"]}</text>')
        legend = [s for s in (series(m) for m in p["metrics"]) if s]
        for i, line in enumerate(legend):
            ly = py + ph + 18 + i * 16
            color = COLORS[i % len(COLORS)]
            out.append(f'<rect x="{px}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
            out.append(f'<text x="{px + 16}" y="{ly}" font-size="12" fill="#545b64">{escape(line)}</text>')
        out.append(f'<text x="{x + wd - 12}" y="{y + 24}" font-size="12" fill="#879596" text-anchor="end">'
                   f'{p.get("period", 300)} s</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    target = argv[1] if len(argv) > 1 else os.path.join(ROOT, "docs", "dashboard.svg")
    with open(target, "w") as f:
        f.write(svg(body()))
    print(f"render_dashboard: wrote {os.path.relpath(target, ROOT)}")


if __name__ == "__main__":
    main(sys.argv)
