#!/usr/bin/env python3
"""Draws a UOPC_TRACE file as an SVG timeline: one row per track (a device, the plans, the
collectives) of every rank, a bar per event coloured by its kind. No dependencies.

usage: tools/trace_svg.py TRACE.json OUT.svg [--steps N]

--steps N  draw the last N training steps only (default: everything): a step starts with
           rank 0's largest plan (the forward and backward pass).
"""
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {"plan": "#9ecae1", "kernel": "#3182bd", "copy": "#31a354", "compile": "#e6550d",
           "collective": "#756bb1"}


def main(argv):
    if "--help" in argv or "-h" in argv or len(argv) < 2:
        print(__doc__.strip())
        return 0 if ("--help" in argv or "-h" in argv) else 2
    steps = None
    if "--steps" in argv:
        at = argv.index("--steps")
        steps = int(argv[at + 1])
        del argv[at:at + 2]
    with open(argv[0]) as f:
        events = json.load(f)["traceEvents"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    start = min(e["ts"] for e in spans)
    if steps:
        plans = [e for e in spans if e["cat"] == "plan" and e["pid"] == 0]
        most = max(int(e["name"].split()[2]) for e in plans)
        starts = sorted(e["ts"] for e in plans if int(e["name"].split()[2]) == most)
        start = starts[-steps]
    spans = [e for e in spans if e["ts"] >= start]
    end = max(e["ts"] + e["dur"] for e in spans)
    order = {"plans": 0, "collectives": 2}
    rows = sorted({(e["pid"], names.get((e["pid"], e["tid"]), "?")) for e in spans},
                  key=lambda r: (r[0], order.get(r[1], 1), r[1]))
    row_of = {r: i for i, r in enumerate(rows)}
    width, left, height, top = 1100, 150, 26, 30
    scale = (width - left - 10) / max(end - start, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{top + height * len(rows) + 50}" font-family="sans-serif" font-size="12">',
           f'<rect width="100%" height="100%" fill="white"/>']
    ms = (end - start) / 1000
    tick = next(t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 1e9)
                if ms / t <= 12)
    y = top + height * len(rows)
    grid = []
    t = 0.0
    while t <= ms:
        x = left + t * 1000 * scale
        grid.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{y + 4}" stroke="#eee"/>')
        grid.append(f'<text x="{x:.1f}" y="{y + 18}" text-anchor="middle">{t:g} ms</text>')
        t += tick
    out += grid
    for (pid, track), i in row_of.items():
        y = top + i * height
        out.append(f'<text x="5" y="{y + 17}">rank {pid} {escape(track)}</text>')
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y + height}" y2="{y + height}" '
                   f'stroke="#ddd"/>')
    for e in spans:
        y = top + row_of[(e["pid"], names.get((e["pid"], e["tid"]), "?"))] * height + 3
        x = left + (e["ts"] - start) * scale
        w = max(e["dur"] * scale, 0.5)
        args = ", ".join(f"{k} {v}" for k, v in e.get("args", {}).items())
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{height - 6}" '
                   f'fill="{COLOURS.get(e["cat"], "#999")}"><title>{escape(e["name"])}: '
                   f'{e["dur"]} us {escape(args)}</title></rect>')
    x = left
    for cat, colour in COLOURS.items():
        out.append(f'<rect x="{x}" y="8" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="18">{cat}</text>')
        x += 100
    out.append("</svg>")
    with open(argv[1], "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"trace_svg: {len(spans)} events over {ms:.1f} ms of {len(rows)} tracks in {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
