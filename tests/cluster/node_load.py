#!/usr/bin/env python3
"""brim-node under load beside hostile clients (issue 3, acceptance 5).

brim-bench drives 50 connections of GET:SET 9:1 against a node with a
64 MiB limit while, at the same time, a slow reader pipelines 64 KiB GETs
and never reads (I13) and a second client sends oversized and malformed
frames (I10, I12) over and over. The node must keep serving: the bench
finishes with no errors and real throughput, PINGs on a fresh connection
are answered within 2 s throughout, and the node's resident memory stays
below its limit plus 10%. The node and the bench are stopped by PID; every
loop is bounded in count and time.
"""
import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
import brimwire as bw  # noqa: E402

MEMORY_MB = 64
VALUE = 64 * 1024
SECONDS = 8


def check(cond, fmt, *args):
    if not cond:
        raise AssertionError(fmt % args if args else fmt)


def slow_reader(port, stop, result):
    """Pipeline 64 KiB GETs and never read, until blocked or stopped."""
    c = bw.Conn(port)
    c.send(bw.req("SET", 2, b"big", os.urandom(VALUE), 0, 0))
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    c.sock.settimeout(1.0)
    get = bw.req("GET", 3, b"big") * 1000
    sent = 0
    while not stop.is_set() and sent < 100000:
        try:
            c.sock.sendall(get)
            sent += 1000
        except socket.timeout:
            result["blocked"] = True    # the node stopped reading from us
            stop.wait(0.2)
        except OSError as e:
            result["dropped"] = str(e)
            break
    result["sent"] = sent
    stop.wait(SECONDS + 30)         # stay connected, unread, for the run
    c.reset()


def garbage_sender(port, stop, result):
    """Oversized headers, huge declared counts and random bodies, each on
    a fresh connection, until stopped."""
    rng = random.Random(1)
    bodies = [b"\xdd\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xfe", b"\xc1",
              b"\x81\xc1\x00", b"\x05"]
    n = 0
    while not stop.is_set() and n < 20000:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
            if n % 3 == 0:
                s.sendall(b"\xff\xff\xff\xff")
            else:
                for _ in range(20):
                    body = (rng.choice(bodies) if rng.random() < 0.5 else
                            bytes(rng.getrandbits(8) for _ in
                                  range(rng.randint(1, 64))))
                    s.sendall(struct.pack(">I", len(body)) + body)
            s.close()
        except OSError:
            pass
        n += 1
        stop.wait(0.01)
    result["connections"] = n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--node", required=True)
    ap.add_argument("--bench", required=True)
    args = ap.parse_args()

    node = bw.Node(args.node, "--memory-mb", MEMORY_MB)
    stop = threading.Event()
    bench = None
    try:
        limit_kib = MEMORY_MB * 1024
        rss0 = node.rss_kib()
        slow_res, junk_res = {}, {}
        bench = subprocess.Popen(
            [args.bench, "--target", "brim", "--server",
             "127.0.0.1:%d" % node.port, "--connections", "50",
             "--keys", "20000", "--value-size", "100", "--get-ratio", "0.9",
             "--duration", str(SECONDS), "--timeout", "3000", "--quiet",
             "--json"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        threads = [threading.Thread(target=slow_reader,
                                    args=(node.port, stop, slow_res),
                                    daemon=True),
                   threading.Thread(target=garbage_sender,
                                    args=(node.port, stop, junk_res),
                                    daemon=True)]
        for t in threads:
            t.start()
        worst_rss, worst_ping, pings = rss0, 0.0, 0
        deadline = time.monotonic() + SECONDS + 30
        while bench.poll() is None and time.monotonic() < deadline:
            c = node.conn()
            t0 = time.monotonic()
            rep = c.call("PING", 7, timeout=2.0)
            worst_ping = max(worst_ping, time.monotonic() - t0)
            check(rep[0] == 0, "PING failed: %r", rep)
            c.close()
            pings += 1
            worst_rss = max(worst_rss, node.rss_kib())
            time.sleep(0.2)
        check(bench.poll() is not None, "brim-bench did not finish in time")
        out = bench.stdout.read().decode(errors="replace")
        stop.set()
        for t in threads:
            t.join(10)
        st = bw.stats(node.conn())
        last = out.strip().splitlines()[-1] if out.strip() else "{}"
        res = json.loads(last)
        print("bench: %.0f ops/s, errors %d, p99 %.0f us" %
              (res.get("ops_per_sec", 0), res.get("errors", -1),
               res.get("p99_us", 0)))
        print("slow reader: %r; garbage connections: %r" %
              (slow_res, junk_res))
        print("PINGs %d, slowest %.3f s; RSS start %d KiB, worst %d KiB, "
              "limit %d KiB; read_pauses %d, bad_requests %d" %
              (pings, worst_ping, rss0, worst_rss, limit_kib,
               st["read_pauses"], st["bad_requests"]))
        check(bench.returncode == 0, "brim-bench failed:\n%s", out[-3000:])
        check(res.get("errors") == 0, "bench errors: %r", res.get("errors"))
        check(res.get("ops_per_sec", 0) > 1000, "bench throughput too low")
        check(pings >= 5, "too few PINGs: %d", pings)
        check(junk_res.get("connections", 0) > 10,
              "the garbage sender barely ran: %r", junk_res)
        check(st["bad_requests"] > 0, "no malformed frame reached the node")
        check(st["read_pauses"] > 0, "the node never paused the slow reader")
        check(worst_rss < limit_kib * 1.10,
              "RSS %d KiB above the limit plus 10%% (%d KiB)",
              worst_rss, limit_kib * 1.10)
        check(node.alive(), "the node died")
    finally:
        stop.set()
        if bench is not None and bench.poll() is None:
            bench.kill()
            bench.wait()
        node.stop()
        try:
            node.check_clean()
        finally:
            node.cleanup()
    print("ok")


if __name__ == "__main__":
    main()
