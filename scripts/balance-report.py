#!/usr/bin/env python3
"""The figures and charts of docs/balance.md, from the tables in data/ (standard library only).

    scripts/balance-report.py [--runs .ci/engines/runs] > /tmp/figures.md

Correlations (Pearson, Spearman) of every c960 table with every published table, each with a
95 % percentile bootstrap interval (2000 resamples of the common starts, seed 960); the ranking;
the cost per start from the chunk databases when present; SVG charts in docs/balance/.
"""
import csv, glob, math, os, random, sqlite3, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(ROOT)
RUNS = sys.argv[sys.argv.index("--runs") + 1] if "--runs" in sys.argv else ".ci/engines/runs"
SECTIONS = {}
_current = ["COVERAGE"]


def section(name):
    _current[0] = name


def print(*args, end="\n"):  # noqa: A001 - collects the figures by section
    SECTIONS.setdefault(_current[0], []).append(" ".join(str(a) for a in args) + end)


def load(path, col, scale=1.0):
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get(col) not in (None, ""):
                out[int(r["sp"])] = float(r[col]) * scale
    return out


def arrangement(sp):
    """Scharnagl decoding of the white back rank."""
    rank = [None] * 8
    n, b1 = divmod(sp, 4)
    rank[2 * b1 + 1] = "B"
    n, b2 = divmod(n, 4)
    rank[2 * b2] = "B"
    n, q = divmod(n, 6)
    free = [i for i in range(8) if rank[i] is None]
    rank[free[q]] = "Q"
    knights = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)][n]
    free = [i for i in range(8) if rank[i] is None]
    for k in knights:
        rank[free[k]] = "N"
    free = [i for i in range(8) if rank[i] is None]
    for i, p in zip(free, "RKR"):
        rank[i] = p
    return "".join(rank)


assert arrangement(518) == "RNBQKBNR"


def zscores(t):
    m = sum(t.values()) / len(t)
    s = math.sqrt(sum((v - m) ** 2 for v in t.values()) / len(t))
    return {k: (v - m) / s for k, v in t.items()}


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sxy / (sx * sy)


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    return pearson(ranks(x), ranks(y))


def with_interval(stat, x, y, reps=2000, seed=960):
    rng = random.Random(seed)
    n = len(x)
    vals = []
    for _ in range(reps):
        idx = [rng.randrange(n) for _ in range(n)]
        vals.append(stat([x[i] for i in idx], [y[i] for i in idx]))
    vals.sort()
    return stat(x, y), vals[int(0.025 * reps)], vals[int(0.975 * reps) - 1]


sf19 = load("data/balance_sf19_d16.csv", "score_cp")
sf19_est = load("data/balance_sf19_d16.csv", "estimate_cp")
sf15 = load("data/balance_stockfish_d16.csv", "score_cp")
builtin = load("data/not-a-result_builtin_d10.csv", "score_cp")
published = {"Stockfish 18, depth 25 (Chess960EvalAnalyzer)": load(
    "common/tests/data/balance_sf18_d25.csv", "eval_pawns", 100.0)}
common19 = sorted(sf19)
z19, z15 = zscores({s: sf19_est[s] for s in common19}), zscores({s: sf15[s] for s in common19})
combo = {s: (z19[s] + z15[s]) / 2 for s in common19}
tables = {
    "c960 Stockfish 19 WASM d16, depth-16 score": sf19,
    "c960 Stockfish 19 WASM d16, estimator (mean of depths 13-16)": sf19_est,
    "c960 Stockfish 15.1 d16": sf15,
    "c960 z-mean of SF19 estimator and SF15.1 d16": combo,
    "c960 built-in d10 (not a result)": builtin,
}

print(f"Starts in the table of record: {len(sf19)} of 960 (every one agreed at quorum 2).")
section("CORRELATIONS")
print("| c960 table | published table | n | Pearson [95 % CI] | Spearman [95 % CI] |")
print("| --- | --- | --- | --- | --- |")
for pname, ptab in published.items():
    for name, tab in tables.items():
        sps = sorted(set(tab) & set(ptab) & set(sf19))
        x, y = [tab[s] for s in sps], [ptab[s] for s in sps]
        p, s = with_interval(pearson, x, y), with_interval(spearman, x, y)
        print(f"| {name} | {pname} | {len(sps)} | {p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}] "
              f"| {s[0]:.3f} [{s[1]:.3f}, {s[2]:.3f}] |")
print()
# Between c960 tables, on the same starts.
sps = sorted(sf19)
x, y = [sf19[s] for s in sps], [sf15[s] for s in sps]
p = with_interval(pearson, x, y)
print(f"SF19 d16 vs SF15.1 d16 on the same {len(sps)} starts: Pearson {p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}]\n")

section("ESTIMATOR")
# Estimator: the mean of the k deepest depths, k = 1..8, against the published table.
depths = {}
with open("data/balance_sf19_d16_depths.csv") as f:
    for r in csv.DictReader(f):
        depths.setdefault(int(r["sp"]), []).append(float(r["score_cp"] or 0))
ref = published["Stockfish 18, depth 25 (Chess960EvalAnalyzer)"]
line = []
for k in range(1, 9):
    x = [sum(depths[s][-k:]) / k for s in sps]
    line.append(f"k={k}: {pearson(x, [ref[s] for s in sps]):.3f}")
print("Pearson vs SF18 d25 of the mean of the k deepest depths: " + ", ".join(line) + "\n")

section("COST")
# Cost per start from the chunk databases.
dbs = [db for db in sorted(glob.glob(os.path.join(RUNS, "chunk-*.db")))
       if os.path.exists(db[:-3] + ".csv")]
if dbs:
    n = el = nodes = lost = 0
    for db in dbs:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        a, b, d = c.execute("SELECT count(*), sum(elapsed_ms), sum(nodes) FROM results WHERE state = 1").fetchone()
        n, el, nodes = n + a, el + (b or 0), nodes + (d or 0)
        lost += c.execute("SELECT count(*) FROM results WHERE outcome = 2").fetchone()[0]
    print(f"Cost: {n} replicas returned for {n // 2} starts; mean {el / n / 1000:.2f} s wall and "
          f"{nodes / n:,.0f} nodes per replica (quorum 2: twice that per start); {lost} replicas "
          "disagreed with their quorum.\n")

section("RANKING")
# Ranking.
ranked = sorted(sf19_est.items(), key=lambda kv: -kv[1])
pos = {sp: i + 1 for i, (sp, _) in enumerate(ranked)}
print("Least balanced (estimator, cp): " + ", ".join(f"{sp} {arrangement(sp)} {v:+.1f}" for sp, v in ranked[:10]))
print("\nMost balanced: " + ", ".join(f"{sp} {arrangement(sp)} {v:+.1f}" for sp, v in ranked[::-1][:10]))
if 518 in sf19_est:
    print(f"\n518 RNBQKBNR: {sf19_est[518]:+.1f} cp, rank {pos[518]} of {len(ranked)}")
vals = sorted(sf19_est.values())
mean = sum(vals) / len(vals)
sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
print(f"\nMean {mean:+.1f} cp, median {vals[len(vals) // 2]:+.1f}, sd {sd:.1f}, White better in "
      f"{sum(v > 0 for v in vals)} of {len(vals)}")
with open("docs/balance/ranking_sf19_d16.csv", "w") as f:
    f.write("rank,sp,arrangement,estimate_cp,score_cp\n")
    for i, (sp, v) in enumerate(ranked):
        f.write(f"{i + 1},{sp},{arrangement(sp)},{v:.2f},{int(sf19[sp])}\n")


# Charts.
def colour(t):
    """t in [0, 1]: blue (balanced) to red (White's edge large)."""
    t = min(1.0, max(0.0, t))
    r, g, b = int(40 + 215 * t), int(90 + 100 * (1 - abs(2 * t - 1))), int(255 - 215 * t)
    return f"rgb({r},{g},{b})"


def svg(w, h, body, title):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="sans-serif" font-size="11"><rect width="{w}" height="{h}" fill="white"/>'
            f'<text x="{w / 2}" y="16" text-anchor="middle" font-size="13">{title}</text>{body}</svg>\n')


# 1. Score distribution (histogram, 518 marked).
lo, hi, bw = math.floor(min(vals) / 5) * 5, math.ceil(max(vals) / 5) * 5, 2.5
bins = [0] * int((hi - lo) / bw + 1)
for v in vals:
    bins[int((v - lo) / bw)] += 1
W, H, L, B = 640, 320, 50, 40
sx = (W - L - 20) / len(bins)
sy = (H - B - 40) / max(bins)
body = ""
for i, c in enumerate(bins):
    body += f'<rect x="{L + i * sx:.1f}" y="{H - B - c * sy:.1f}" width="{sx - 1:.1f}" height="{c * sy:.1f}" fill="#4a7bb7"/>'
for t in range(int(lo), int(hi) + 1, 10):
    x = L + (t - lo) / bw * sx
    body += f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle">{t}</text>'
if 518 in sf19_est:
    x = L + (sf19_est[518] - lo) / bw * sx
    body += f'<line x1="{x:.1f}" x2="{x:.1f}" y1="30" y2="{H - B}" stroke="red"/><text x="{x + 3:.1f}" y="40" fill="red">518</text>'
body += f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">White\'s edge, centipawns (estimator)</text>'
body += f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" text-anchor="middle">starts</text>'
open("docs/balance/distribution.svg", "w").write(svg(W, H, body, f"Stockfish 19 d16: White's edge over {len(vals)} starts"))

# 2. Heat map: rows = knight placement x queen (60), columns = light x dark bishop file (16).
cell, L, T = 12, 140, 40
W, H = L + 16 * cell + 120, T + 60 * cell + 40
body = ""
for sp, v in sf19_est.items():
    row, col = sp // 16, sp % 16
    body += (f'<rect x="{L + col * cell}" y="{T + row * cell}" width="{cell - 1}" height="{cell - 1}" '
             f'fill="{colour((v - vals[0]) / (vals[-1] - vals[0]))}"><title>{sp} {arrangement(sp)} {v:+.1f}</title></rect>')
for row in range(0, 60, 6):
    n, q = divmod(row, 6)
    body += f'<text x="{L - 4}" y="{T + row * cell + 9}" text-anchor="end">sp {row * 16}-{row * 16 + 95}</text>'
body += f'<text x="{L}" y="{T - 6}">bishops: sp mod 16 (dark file x 4 + light file)</text>'
if 518 in sf19_est:
    body += f'<rect x="{L + 518 % 16 * cell}" y="{T + 518 // 16 * cell}" width="{cell - 1}" height="{cell - 1}" fill="none" stroke="black" stroke-width="2"/>'
for i in range(11):
    body += f'<rect x="{L + 16 * cell + 30}" y="{T + i * 20}" width="14" height="18" fill="{colour(1 - i / 10)}"/>'
    body += f'<text x="{L + 16 * cell + 50}" y="{T + i * 20 + 13}">{vals[-1] - i / 10 * (vals[-1] - vals[0]):+.0f}</text>'
body += f'<text x="{L}" y="{H - 12}">rows: 16 starts each, knights then queen (Scharnagl); 518 outlined</text>'
open("docs/balance/heatmap.svg", "w").write(svg(W, H, body, "White's edge by arrangement (cp)"))

# 3. Score vs 518: every start's edge minus 518's, sorted, and c960 vs published scatter.
if 518 in sf19_est:
    d = sorted(v - sf19_est[518] for v in vals)
    W, H, L, B = 640, 300, 50, 30
    ymin, ymax = min(d), max(d)
    sy = (H - B - 40) / (ymax - ymin)
    pts = " ".join(f"{L + i / len(d) * (W - L - 20):.1f},{H - B - (v - ymin) * sy:.1f}" for i, v in enumerate(d))
    y0 = H - B - (0 - ymin) * sy
    body = f'<polyline points="{pts}" fill="none" stroke="#4a7bb7" stroke-width="2"/>'
    body += f'<line x1="{L}" x2="{W - 20}" y1="{y0:.1f}" y2="{y0:.1f}" stroke="red"/><text x="{L + 4}" y="{y0 - 4:.1f}" fill="red">518</text>'
    for t in range(int(ymin // 10 * 10), int(ymax) + 1, 10):
        body += f'<text x="{L - 4}" y="{H - B - (t - ymin) * sy + 4:.1f}" text-anchor="end">{t:+d}</text>'
    body += f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">starts, sorted ({sum(x < 0 for x in d)} below 518, {sum(x > 0 for x in d)} above)</text>'
    open("docs/balance/vs518.svg", "w").write(svg(W, H, body, "White's edge minus that of 518 RNBQKBNR (cp, estimator)"))
sps = sorted(set(sf19_est) & set(ref))
W = H = 420
L, B = 50, 40
xs, ys = [sf19_est[s] for s in sps], [ref[s] for s in sps]
x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
px = lambda v: L + (v - x0) / (x1 - x0) * (W - L - 20)
py = lambda v: H - B - (v - y0) / (y1 - y0) * (H - B - 40)
body = "".join(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="2" fill="{"red" if s == 518 else "#4a7bb7"}" fill-opacity="0.6"/>' for s, a, b in zip(sps, xs, ys))
body += f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">c960 Stockfish 19 d16 estimator (cp)</text>'
body += f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" text-anchor="middle">Stockfish 18 d25 (cp)</text>'
body += f'<text x="{L + 5}" y="40">r = {pearson(xs, ys):.3f}, n = {len(sps)}</text>'
open("docs/balance/scatter_sf18.svg", "w").write(svg(W, H, body, "c960 table vs the published SF18 d25 table"))

# Output: all figures to stdout, and each section between its markers in docs/balance.md.
text = {k: "".join(v).strip() + "\n" for k, v in SECTIONS.items()}
sys.stdout.write("".join(f"## {k.lower()}\n\n{v}\n" for k, v in text.items()))
doc = open("docs/balance.md").read()
for k, v in text.items():
    a, b = f"<!-- {k} -->", f"<!-- /{k} -->"
    if a in doc and b in doc:
        doc = doc[: doc.index(a) + len(a)] + "\n" + v + doc[doc.index(b):]
open("docs/balance.md", "w").write(doc)
