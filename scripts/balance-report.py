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


SF18 = "data/balance_sf18_d20.csv"
sf18 = load(SF18, "score_cp") if os.path.exists(SF18) else {}
sf19 = load("data/balance_sf19_d16.csv", "score_cp")
sf19_est = load("data/balance_sf19_d16.csv", "estimate_cp")
# Stockfish 15.1 d16: the quorum-2 table through the coordinator once it is whole, the older
# single-search table (same engine and budget) before.
SF15Q = "data/balance_sf15_d16.csv"
sf15_single = load("data/balance_stockfish_d16.csv", "score_cp")
sf15 = load(SF15Q, "score_cp") if os.path.exists(SF15Q) else {}
sf15 = sf15 if len(sf15) == 960 else sf15_single
builtin = load("data/not-a-result_builtin_d10.csv", "score_cp")
published = {"Stockfish 18, depth 25 (Chess960EvalAnalyzer)": load(
    "common/tests/data/balance_sf18_d25.csv", "eval_pawns", 100.0)}
common19 = sorted(sf19)
z19, z15 = zscores({s: sf19_est[s] for s in common19}), zscores({s: sf15[s] for s in common19})
combo = {s: (z19[s] + z15[s]) / 2 for s in common19}
# The estimator of record (docs/balance.md, "The estimator of record"): the weighted mean of the
# z-scores of three engines' searches of each start, written on Stockfish 18's centipawn scale.
#   a = Stockfish 18 d20 search, mean of its depth-19 and depth-20 scores (RECORD_DEPTHS deepest)
#   b = Stockfish 19 d16 estimator (mean of its 4 deepest depths, `estimate_cp`)
#   c = Stockfish 15.1 d16 score
#   estimate = mean(a) + sd(a) * (0.6 z(a) + 0.2 z(b) + 0.2 z(c))
# The weights and depth count are the choice the cross-validation below makes most often.
RECORD_DEPTHS, RECORD_WEIGHTS = 2, (0.6, 0.2, 0.2)
sf18_by_depth = {}
if os.path.exists("data/balance_sf18_d20_depths.csv"):
    with open("data/balance_sf18_d20_depths.csv") as f:
        for r in csv.DictReader(f):
            sf18_by_depth.setdefault(int(r["sp"]), {})[int(r["depth"])] = float(r["score_cp"] or 0)


def sf18_last(k):
    return {s: sum(v for _, v in sorted(d.items())[-k:]) / k for s, d in sf18_by_depth.items()}


def record_estimate(k, w):
    a, b, c = sf18_last(k), sf19_est, sf15
    za, zb, zc = zscores(a), zscores(b), zscores(c)
    m = sum(a.values()) / len(a)
    sd = math.sqrt(sum((v - m) ** 2 for v in a.values()) / len(a))
    return {s: m + sd * (w[0] * za[s] + w[1] * zb[s] + w[2] * zc[s]) for s in a}


whole = len(sf18) == 960 and len(sf18_by_depth) == 960 and len(sf19_est) == 960 and len(sf15) == 960
record_table = record_estimate(RECORD_DEPTHS, RECORD_WEIGHTS) if whole else {}
tables = {
    "c960 estimator of record (0.6 SF18 d19-20 + 0.2 SF19 d16 + 0.2 SF15.1 d16, z-scores)": record_table,
    "c960 Stockfish 18 WASM d20, mean of depths 19-20": sf18_last(RECORD_DEPTHS),
    "c960 Stockfish 18 WASM d20 (the reference's engine and settings)": sf18,
    "c960 Stockfish 19 WASM d16, depth-16 score": sf19,
    "c960 Stockfish 19 WASM d16, estimator (mean of depths 13-16)": sf19_est,
    "c960 Stockfish 15.1 d16": sf15,
    "c960 z-mean of SF19 estimator and SF15.1 d16": combo,
    "c960 built-in d10 (not a result)": builtin,
}

if whole:
    record = record_table
    record_name, record_file = "c960 estimator of record", "record"
    with open("data/balance_record.csv", "w") as f:
        f.write("sp,arrangement,estimate_cp,sf18_d19_cp,sf18_d20_cp,sf19_d16_estimate_cp,sf15_d16_cp\n")
        for sp in sorted(record):
            f.write(f"{sp},{arrangement(sp)},{record[sp]:.2f},{sf18_by_depth[sp][19]:.0f},"
                    f"{sf18[sp]:.0f},{sf19_est[sp]:.2f},{sf15[sp]:.0f}\n")
elif len(sf18) == 960:
    record, record_name, record_file = sf18, "Stockfish 18 d20", "sf18_d20"
else:
    record, record_name, record_file = sf19_est, "Stockfish 19 d16 estimator", "sf19_d16"
sf15_note = ("Stockfish 15.1 d16 at quorum 2 (`data/balance_sf15_d16.csv`)" if sf15 is not sf15_single
             else "Stockfish 15.1 d16 (single searches, `data/balance_stockfish_d16.csv`)")
print(f"Stockfish 18 d20 (`data/balance_sf18_d20.csv`): {len(sf18)} of 960 starts; Stockfish 19 d16: "
      f"{len(sf19)} of 960; {sf15_note}: {len(sf15)} of 960 (the first two, and the third where so "
      f"named, agreed at quorum 2). Table of record: {record_name}"
      + (" (`data/balance_record.csv`)." if whole else "."))
if whole and sf15 is not sf15_single:
    same = sum(sf15[s] == sf15_single[s] for s in sf15)
    print(f"\nThe quorum-2 Stockfish 15.1 table equals the earlier single-search one on {same} of 960 starts.")
section("CORRELATIONS")
print("| c960 table | published table | n | Pearson [95 % CI] | Spearman [95 % CI] |")
print("| --- | --- | --- | --- | --- |")
for pname, ptab in published.items():
    for name, tab in tables.items():
        sps = sorted(set(tab) & set(ptab) & set(sf19))
        if not sps:
            continue
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

# The reference's engine at depth d, d = 12..20: one search per start, whose first 20
# iterations are those of the reference's depth-25 search.
if sf18 and os.path.exists("data/balance_sf18_d20_depths.csv"):
    by = {}
    with open("data/balance_sf18_d20_depths.csv") as f:
        for r in csv.DictReader(f):
            if r["score_cp"]:
                by.setdefault(int(r["depth"]), {})[int(r["sp"])] = float(r["score_cp"])
    line = []
    for d in range(12, 21):
        sps18 = sorted(set(by.get(d, {})) & set(ref))
        if sps18:
            line.append(f"d{d}: {pearson([by[d][s] for s in sps18], [ref[s] for s in sps18]):.3f}")
    print("Pearson vs SF18 d25 of Stockfish 18's score at depth d (same search): " + ", ".join(line) + "\n")

# How the estimator of record was chosen, and what it is worth on starts it was not chosen on:
# 2-fold cross-validation. 200 times, the 960 starts are split at random into two halves; on
# the first half the (k, weights) of a small grid with the best Pearson against the reference
# is picked; its Pearson on the other half is recorded, beside Stockfish 18 d20's on that half.
if whole:
    grid = [(k, (round(1 - w - v, 1), w, v)) for k in (1, 2, 3)
            for w in (0, 0.1, 0.2, 0.3, 0.4) for v in (0, 0.1, 0.2, 0.3, 0.4) if w + v <= 0.6 + 1e-9]
    cands = {g: record_estimate(*g) for g in grid}
    rng = random.Random(960)
    starts = sorted(ref)
    picks, outs, base = {}, [], []
    for _ in range(200):
        rng.shuffle(starts)
        a_half, b_half = starts[:480], starts[480:]
        ya, yb = [ref[s] for s in a_half], [ref[s] for s in b_half]
        best = max(grid, key=lambda g: pearson([cands[g][s] for s in a_half], ya))
        picks[best] = picks.get(best, 0) + 1
        outs.append(pearson([cands[best][s] for s in b_half], yb))
        base.append(pearson([sf18[s] for s in b_half], yb))
    outs.sort(), base.sort()
    top = sorted(picks.items(), key=lambda kv: -kv[1])[:4]
    print("Cross-validated estimator (2-fold, 200 random halvings, seed 960; grid: k = 1-3 deepest "
          "SF18 depths, weights of SF19 and SF15.1 0-0.4 in steps of 0.1): picked most often "
          + ", ".join(f"k={k} weights {w[0]:.1f}/{w[1]:.1f}/{w[2]:.1f} ({n} times)" for (k, w), n in top)
          + f". Pearson on the held-out half: median {outs[100]:.3f} (2.5-97.5 %: {outs[5]:.3f}-{outs[194]:.3f}); "
          f"Stockfish 18 d20 alone on the same halves: median {base[100]:.3f} ({base[5]:.3f}-{base[194]:.3f}).\n")

section("COST")
# Each engine's mean seconds of wall time per replica (one search of one start, one core), and
# the line the figures print, as recorded when it was computed: the chunk databases behind them
# are scratch (.ci/engines/runs) and are read instead when present.
RECORDED_COST = {
    "Stockfish 19 d16": (9.65, "1920 replicas returned for 960 starts; mean 9.65 s wall and "
                         "154,067 nodes per replica (quorum 2: twice that per start); 0 replicas "
                         "disagreed with their quorum."),
    "Stockfish 18 d20": (12.12, "1920 replicas returned for 960 starts; mean 12.12 s wall and "
                         "959,618 nodes per replica (quorum 2: twice that per start); 0 replicas "
                         "disagreed with their quorum."),
    "Stockfish 15.1 d16": (0.69, "1920 replicas returned for 960 starts; mean 0.69 s wall and "
                           "220,066 nodes per replica (quorum 2: twice that per start); 0 replicas "
                           "disagreed with their quorum."),
}
cost_s = {}
for label, runs in (("Stockfish 19 d16", RUNS), ("Stockfish 18 d20", os.path.join(RUNS, "sf18-d20")),
                   ("Stockfish 15.1 d16", os.path.join(RUNS, "sf15-d16"))):
    dbs = [db for db in sorted(glob.glob(os.path.join(runs, "chunk-*.db")))
           if os.path.exists(db[:-3] + ".csv")]
    if not dbs:
        cost_s[label], line = RECORDED_COST[label]
        print(f"Cost, {label} (as recorded when it was computed; its chunk databases are not on "
              f"this machine): {line}\n")
        continue
    n = el = nodes = lost = 0
    for db in dbs:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        a, b, d = c.execute("SELECT count(*), sum(elapsed_ms), sum(nodes) FROM results WHERE state = 1").fetchone()
        n, el, nodes = n + a, el + (b or 0), nodes + (d or 0)
        lost += c.execute("SELECT count(*) FROM results WHERE outcome = 2").fetchone()[0]
    cost_s[label] = el / n / 1000
    print(f"Cost, {label}: {n} replicas returned for {n // 2} starts; mean {el / n / 1000:.2f} s wall and "
          f"{nodes / n:,.0f} nodes per replica (quorum 2: twice that per start); {lost} replicas "
          "disagreed with their quorum.\n")

# Agreement against cost. The wall times above were taken on shared, loaded cores and are not
# comparable between tables; these are CPU seconds per search on a quiet core of the same
# 2-vCPU AMD EPYC (Zen 3) VM, by `scripts/engine-cpu.py DEPTH ENGINE` over starts 0, 100, 300,
# 518, 700 and 900 (one engine process, start-up included), 2026-12-01.
QUIET_CPU_S = {"Stockfish 18 d20": 4.86, "Stockfish 19 d16": 1.22, "Stockfish 15.1 d16": 0.60}
if whole:
    c18, c19, c15 = (QUIET_CPU_S[k] for k in ("Stockfish 18 d20", "Stockfish 19 d16", "Stockfish 15.1 d16"))
    rows = [("Stockfish 15.1 d16", c15, sf15), ("Stockfish 19 d16 estimator", c19, sf19_est),
            ("Stockfish 18 d20", c18, sf18), ("Stockfish 18 d20, mean of depths 19-20", c18, sf18_last(2)),
            ("0.8 SF18 d19-20 + 0.2 SF15.1 d16", c18 + c15, record_estimate(2, (0.8, 0.0, 0.2))),
            ("estimator of record (0.6 / 0.2 / 0.2)", c18 + c19 + c15, record)]
    print("| table | CPU-s per start, one search (quiet core) | CPU-hours, 960 starts at quorum 2 "
          "| Pearson vs SF18 d25 |")
    print("| --- | ---: | ---: | ---: |")
    for name, sec, tab in rows:
        r = pearson([tab[s] for s in sorted(ref)], [ref[s] for s in sorted(ref)])
        print(f"| {name} | {sec:.2f} | {sec * 960 * 2 / 3600:.2f} | {r:.3f} |")
    print()

section("RANKING")
# Ranking.
ranked = sorted(record.items(), key=lambda kv: -kv[1])
pos = {sp: i + 1 for i, (sp, _) in enumerate(ranked)}
print(f"Least balanced ({record_name}, cp): " + ", ".join(f"{sp} {arrangement(sp)} {v:+.1f}" for sp, v in ranked[:10]))
print("\nMost balanced: " + ", ".join(f"{sp} {arrangement(sp)} {v:+.1f}" for sp, v in ranked[::-1][:10]))
if 518 in record:
    print(f"\n518 RNBQKBNR: {record[518]:+.1f} cp, rank {pos[518]} of {len(ranked)}")
vals = sorted(record.values())
mean = sum(vals) / len(vals)
sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
print(f"\nMean {mean:+.1f} cp, median {vals[len(vals) // 2]:+.1f}, sd {sd:.1f}, White better in "
      f"{sum(v > 0 for v in vals)} of {len(vals)}")
with open(f"docs/balance/ranking_{record_file}.csv", "w") as f:
    f.write("rank,sp,arrangement,estimate_cp,score_cp\n")
    for i, (sp, v) in enumerate(ranked):
        f.write(f"{i + 1},{sp},{arrangement(sp)},{v:.2f},{int((sf18 if len(sf18) == 960 else sf19)[sp])}\n")


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
if 518 in record:
    x = L + (record[518] - lo) / bw * sx
    body += f'<line x1="{x:.1f}" x2="{x:.1f}" y1="30" y2="{H - B}" stroke="red"/><text x="{x + 3:.1f}" y="40" fill="red">518</text>'
body += f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">White\'s edge, centipawns</text>'
body += f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" text-anchor="middle">starts</text>'
open("docs/balance/distribution.svg", "w").write(svg(W, H, body, f"{record_name}: White's edge over {len(vals)} starts"))

# 2. Heat map: rows = knight placement x queen (60), columns = light x dark bishop file (16).
cell, L, T = 12, 140, 40
W, H = L + 16 * cell + 120, T + 60 * cell + 40
body = ""
for sp, v in record.items():
    row, col = sp // 16, sp % 16
    body += (f'<rect x="{L + col * cell}" y="{T + row * cell}" width="{cell - 1}" height="{cell - 1}" '
             f'fill="{colour((v - vals[0]) / (vals[-1] - vals[0]))}"><title>{sp} {arrangement(sp)} {v:+.1f}</title></rect>')
for row in range(0, 60, 6):
    n, q = divmod(row, 6)
    body += f'<text x="{L - 4}" y="{T + row * cell + 9}" text-anchor="end">sp {row * 16}-{row * 16 + 95}</text>'
body += f'<text x="{L}" y="{T - 6}">bishops: sp mod 16 (dark file x 4 + light file)</text>'
if 518 in record:
    body += f'<rect x="{L + 518 % 16 * cell}" y="{T + 518 // 16 * cell}" width="{cell - 1}" height="{cell - 1}" fill="none" stroke="black" stroke-width="2"/>'
for i in range(11):
    body += f'<rect x="{L + 16 * cell + 30}" y="{T + i * 20}" width="14" height="18" fill="{colour(1 - i / 10)}"/>'
    body += f'<text x="{L + 16 * cell + 50}" y="{T + i * 20 + 13}">{vals[-1] - i / 10 * (vals[-1] - vals[0]):+.0f}</text>'
body += f'<text x="{L}" y="{H - 12}">rows: 16 starts each, knights then queen (Scharnagl); 518 outlined</text>'
open("docs/balance/heatmap.svg", "w").write(svg(W, H, body, "White's edge by arrangement (cp)"))

# 3. Score vs 518: every start's edge minus 518's, sorted, and c960 vs published scatter.
if 518 in record:
    d = sorted(v - record[518] for v in vals)
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
    open("docs/balance/vs518.svg", "w").write(svg(W, H, body, f"White's edge minus that of 518 RNBQKBNR (cp, {record_name})"))
sps = sorted(set(record) & set(ref))
W = H = 420
L, B = 50, 40
xs, ys = [record[s] for s in sps], [ref[s] for s in sps]
x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
px = lambda v: L + (v - x0) / (x1 - x0) * (W - L - 20)
py = lambda v: H - B - (v - y0) / (y1 - y0) * (H - B - 40)
body = "".join(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="2" fill="{"red" if s == 518 else "#4a7bb7"}" fill-opacity="0.6"/>' for s, a, b in zip(sps, xs, ys))
body += f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">c960 {record_name} (cp)</text>'
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
