#!/usr/bin/env python3
"""Slowloris check for docs/security-results.md (issue 12): start `c960-coordinator serve` under
`ulimit -n LIMIT`, open N idle connections from 127.0.0.1, count how many the server keeps, and
time GET /api/v1/status from 127.0.0.2.

usage: scripts/idle-connections.py BINARY N LIMIT [serve flags...]
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

binary, n, limit, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
db = os.path.join(tempfile.mkdtemp(), "c960.db")
server = subprocess.Popen(
    ["sh", "-c", f'ulimit -n {limit}; exec "$0" "$@"', binary, "serve", "--listen", "127.0.0.1:0",
     "--db", db, "--open-enrolment"] + extra,
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    time.sleep(1.0)
    closed = 0
    for s in idle:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed += 1
    other = socket.socket()
    other.bind(("127.0.0.2", 0))
    other.settimeout(10)
    started = time.time()
    try:
        other.connect(("127.0.0.1", port))
        other.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = other.recv(100).split(b"\r\n")[0].decode()
    except OSError as e:
        answer = f"no answer ({type(e).__name__})"
    print(f"{' '.join(extra) or 'default flags'}: {n} idle connections under ulimit -n {limit}: "
          f"{n - closed} kept open, {closed} closed; /status from 127.0.0.2: {answer!r} "
          f"in {(time.time() - started) * 1000:.0f} ms")
finally:
    server.kill()
    server.wait()
