#!/usr/bin/env python3
"""CPU seconds per search of a UCI engine at the balance tables' settings (docs/balance.md,
"Cost per start"): one engine process searches the given starts in turn, each after
`ucinewgame`, with UCI_Chess960, Threads 1, Hash 16; prints the process's CPU time per search
(user + system, so a busy machine slows the wall time but not this figure much).

    scripts/engine-cpu.py DEPTH "ENGINE COMMAND" [SP ...]   (default SP: 0 100 300 518 700 900)
    e.g. scripts/engine-cpu.py 16 /usr/games/stockfish
"""
import csv, os, resource, shlex, subprocess, sys, time

if len(sys.argv) < 3:
    sys.exit('usage: scripts/engine-cpu.py DEPTH "ENGINE COMMAND" [SP ...]')
depth, engine = int(sys.argv[1]), shlex.split(sys.argv[2])
sps = [int(s) for s in sys.argv[3:]] or [0, 100, 300, 518, 700, 900]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
fens = {int(r["sp"]): r["fen"] for r in csv.DictReader(open(os.path.join(root, "data/balance_sf15_d16.csv")))}
p = subprocess.Popen(engine, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def send(*lines):
    p.stdin.write("".join(l + "\n" for l in lines))
    p.stdin.flush()


def wait(prefix):
    while not (line := p.stdout.readline()).startswith(prefix):
        if not line:
            sys.exit(f"engine ended before {prefix!r}")


send("uci", "setoption name UCI_Chess960 value true", "setoption name Threads value 1",
     "setoption name Hash value 16", "isready")
wait("readyok")
t0 = time.time()
for sp in sps:
    send("ucinewgame", "isready")
    wait("readyok")
    send(f"position fen {fens[sp]}", f"go depth {depth}")
    wait("bestmove")
send("quit")
p.wait()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print(f"{' '.join(engine)} depth {depth}: {len(sps)} searches, wall {time.time() - t0:.1f} s, "
      f"CPU {cpu:.1f} s (start-up included), {cpu / len(sps):.2f} CPU-s a search")
