#!/usr/bin/env python3
"""The self-play section's figures for docs/balance.md: per start the score with its 95 %
interval and the Elo-style White advantage (from the coordinator's export), beside the analysis
tables for the same starts (Stockfish 19 WASM depth 16 estimator, Debian Stockfish 15.1 depth 16,
the published Stockfish 18 depth 25), with Pearson and Spearman correlations over these starts,
and the cost per game.

    python3 scripts/selfplay-report.py data/selfplay_sf15_n1000.csv [times.txt]
"""
import csv
import math
import sys


def read(path, key, value):
    out = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            v = value(row)
            if v is not None:
                out[int(row[key])] = v
    return out


def pearson(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy)


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


def spearman(xs, ys):
    return pearson(ranks(xs), ranks(ys))


def cp(row):
    if row.get("estimate_cp"):
        return float(row["estimate_cp"])
    return float(row["score_cp"]) if row.get("score_cp") else None


def main():
    path = sys.argv[1]
    rows = list(csv.DictReader(open(path)))
    sf19 = read("data/balance_sf19_d16.csv", "sp", cp)
    sf15 = read("data/balance_stockfish_d16.csv", "sp",
                lambda r: float(r["score_cp"]) if r["score_cp"] else None)
    sf18 = read("common/tests/data/balance_sf18_d25.csv", "sp", lambda r: 100 * float(r["eval_pawns"]))
    print("| sp | games | W / D / L | White's score [95 % CI] | White advantage, Elo [95 % CI] | mean plies | SF19 d16 est. cp | SF15 d16 cp | SF18 d25 cp |")
    print("| ---: | ---: | :---: | :---: | :---: | ---: | ---: | ---: | ---: |")
    total = [0, 0, 0]
    plies = 0.0
    nodes = 0
    for r in rows:
        sp = int(r["sp"])
        w, d, l = int(r["white_wins"]), int(r["draws"]), int(r["black_wins"])
        total = [total[0] + w, total[1] + d, total[2] + l]
        plies += float(r["mean_plies"]) * int(r["games"])
        nodes += int(r["nodes"])
        elo = lambda k: r[k] if r[k] else "—"
        mark = " (RNBQKBNR)" if sp == 518 else ""
        print(f"| {sp}{mark} | {r['games']} | {w} / {d} / {l} | {float(r['score']):.3f} "
              f"[{float(r['score_lo']):.3f}, {float(r['score_hi']):.3f}] | {elo('elo')} "
              f"[{elo('elo_lo')}, {elo('elo_hi')}] | {float(r['mean_plies']):.0f} | "
              f"{sf19.get(sp, float('nan')):+.1f} | {sf15.get(sp, float('nan')):+.0f} | "
              f"{sf18.get(sp, float('nan')):+.0f} |")
    games = sum(total)
    s = (total[0] + total[1] / 2) / games
    var = (total[0] * (1 - s) ** 2 + total[1] * (0.5 - s) ** 2 + total[2] * s ** 2) / games
    half = 1.959964 * math.sqrt(var / games)
    elo = lambda x: 400 * math.log10(x / (1 - x))
    print()
    print(f"All {len(rows)} starts pooled: {games} games, White {total[0]} / draws {total[1]} / "
          f"Black {total[2]}; White scores {s:.3f} [{s - half:.3f}, {s + half:.3f}], "
          f"{elo(s):+.0f} Elo [{elo(s - half):+.0f}, {elo(s + half):+.0f}]; draw rate "
          f"{total[1] / games:.2f}; mean game {plies / games:.0f} plies.")
    print()
    scores = {int(r["sp"]): float(r["score"]) for r in rows}
    sps = sorted(scores)
    for name, table in (("SF19 d16 estimator", sf19), ("SF15 d16", sf15), ("SF18 d25 (published)", sf18)):
        common = [sp for sp in sps if sp in table]
        xs = [scores[sp] for sp in common]
        ys = [table[sp] for sp in common]
        print(f"- self-play score vs {name}: Pearson {pearson(xs, ys):+.2f}, Spearman "
              f"{spearman(xs, ys):+.2f} over {len(common)} starts")
    if len(sys.argv) > 2:
        wall = user = 0.0
        for line in open(sys.argv[2]):
            parts = line.split()
            wall += float(parts[2])
            user += float(parts[3])
        replicas = 2 * games
        print(f"- cost: {wall / 60:.1f} min wall for {replicas} games played ({games} at quorum 2); "
              f"{wall / replicas:.2f} s wall and {nodes / games:,.0f} engine nodes per game "
              f"({user / replicas:.2f} CPU-s of user time per game played, the run process and "
              f"the engines it reaped)")


main()
