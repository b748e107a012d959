"""A dependency-free SVG plot of a run-bench run: one small panel per
scenario and figure (requests/s, server CPU per request, memory per silent
and per idle connection, syscalls per request), one bar per server with its
min-max range as a whisker."""
import math
from xml.sax.saxutils import escape

COLORS = {"weir": "#1f77b4", "weir-uring": "#9467bd", "nginx": "#2ca02c", "floor": "#7f7f7f",
          "uring-floor": "#bcbd22", "weir-base": "#ff7f0e"}
LABEL = {"weir": "weir-demo", "weir-uring": "weir-uring", "nginx": "nginx", "floor": "floor",
         "uring-floor": "uring-floor", "weir-base": "weir-base"}


def _nice(v):
    """The smallest 1, 2, 2.5, 4 or 5 x 10^k at or above v (four even ticks)."""
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 4, 5, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _panel(x0, y0, w, h, title, groups, servers, fmt):
    """groups: [(group label, {kind: summary})]; summary has median/min/max."""
    top = _nice(max([s["max"] for _, g in groups for s in g.values()] + [1e-9]) * 1.12)
    parts = [f'<text x="{x0 + w / 2}" y="{y0 - 8}" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
             f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="#333"/>',
             f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="#333"/>']
    for i in range(5):
        v = top * i / 4
        y = y0 + h - h * i / 4
        parts.append(f'<line x1="{x0 - 4}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{fmt(v)}</text>')
    gw = w / max(len(groups), 1)
    bw = gw * 0.8 / max(len(servers), 1)
    for gi, (label, g) in enumerate(groups):
        gx = x0 + gi * gw + gw * 0.1
        parts.append(f'<text x="{x0 + gi * gw + gw / 2:.1f}" y="{y0 + h + 16}" text-anchor="middle" '
                     f'font-size="11">{escape(label)}</text>')
        for si, kind in enumerate(servers):
            s = g.get(kind)
            if not s:
                continue
            bx = gx + si * bw
            bh = h * s["median"] / top
            parts.append(f'<rect x="{bx:.1f}" y="{y0 + h - bh:.1f}" width="{bw * 0.9:.1f}" height="{bh:.1f}" '
                         f'fill="{COLORS[kind]}"><title>{LABEL[kind]} {fmt(s["median"])}</title></rect>')
            cx = bx + bw * 0.45
            ylo, yhi = y0 + h - h * s["min"] / top, y0 + h - h * s["max"] / top
            parts.append(f'<line x1="{cx:.1f}" y1="{ylo:.1f}" x2="{cx:.1f}" y2="{yhi:.1f}" stroke="#000"/>')
            for yy in (ylo, yhi):
                parts.append(f'<line x1="{cx - 3:.1f}" y1="{yy:.1f}" x2="{cx + 3:.1f}" y2="{yy:.1f}" '
                             f'stroke="#000"/>')
            parts.append(f'<text x="{cx:.1f}" y="{yhi - 3:.1f}" text-anchor="middle" font-size="9">'
                         f'{fmt(s["median"])}</text>')
    return parts


def _num(v):
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e4:
        return f"{v / 1e3:.0f}k"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    if v >= 10:
        return f"{v:.0f}" if v == int(v) or v >= 100 else f"{v:.1f}"
    return f"{v:.2f}".rstrip("0").rstrip(".") if v else "0"


def plot(summ, results):
    servers = results["servers"]
    thr = summ["throughput"]
    scen = list(thr.keys())
    top_row = [(f"{s}: requests/s", {k: v["rps"] for k, v in thr[s].items()}) for s in scen]
    bottom_row = [(f"{s}: CPU µs/request", {k: v["cpu"] for k, v in thr[s].items()}) for s in scen]
    if summ.get("silent"):
        top_row.append(("silent: bytes/connection", summ["silent"]))
    if summ["idle"]:
        top_row.append(("idle: bytes/connection", summ["idle"]))
    sc = {}
    for k, e in results.get("syscalls", {}).items():
        v = e.get("keep-alive", {}).get("per_req")
        if v is not None:
            sc[k] = {"median": v, "min": v, "max": v}
    if sc:
        bottom_row.append(("keep-alive: syscalls/request", sc))
    cols = max(len(top_row), len(bottom_row), 1)
    pw, ph, gx, gy = 200, 150, 70, 70
    W, H = 30 + cols * (pw + gx), 2 * (ph + gy) + 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>']
    for row, panels in enumerate((top_row, bottom_row)):
        for col, (title, g) in enumerate(panels):
            parts += _panel(60 + col * (pw + gx), 30 + row * (ph + gy), pw, ph, title, [("", g)], servers, _num)
    x = 60
    for kind in servers:
        parts.append(f'<rect x="{x}" y="{H - 46}" width="12" height="12" fill="{COLORS[kind]}"/>')
        parts.append(f'<text x="{x + 16}" y="{H - 36}">{LABEL[kind]}</text>')
        x += 110
    parts.append(f'<text x="60" y="{H - 14}" font-size="10">'
                 f'{escape(results["date"])}; median of {results["runs_per_figure"]} runs, whiskers min–max; '
                 f'{escape(results["machine"]["cpu"])}, {results["machine"]["cores"]} cores'
                 f'{"; QUICK RUN" if results.get("quick") else ""}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
