#!/usr/bin/env python3
"""tests/bench/bench_test.py - process tests of brim-bench (label cluster).

Each scenario starts the server it needs (memcached, redis-server or
brim-node) on a free loopback port, runs brim-bench against it, checks its
exit status and output, and stops the server by PID. Every wait and loop is
bounded in count and time. A missing server binary skips the test (exit 77)
with a message.

  bench_test.py --list
  bench_test.py --bench BIN [--node BIN] [--brimctl BIN] SCENARIO.TARGET

Each SCENARIO.TARGET is a case (tests/bench.cmake registers one CTest test
cluster.bench.SCENARIO.TARGET per name of --list); "usage" has no target.

Scenarios:
  smoke     closed loop with --json, --ops with two threads, --rate,
            --latency-log, SIGINT ending a run early
  verify    --verify on a healthy server: lost=0 stale=0 errors=0, exit 0
  stale     --verify while another process writes back values the bench
            wrote earlier: stale > 0, exit 1
  lost      --verify while another process deletes keys: lost > 0, exit 1
  evictions --verify on a server too small for the keys: the run fails
            (JSON "ok" false)
  limits    (brim) values or keys above the node's limits (from HELLO)
            are refused up front: exit 2, naming the flag and the limit
  refused   (brim) a node that answers a frame above its max_frame_bytes
            with [TOOBIG, 0, message] and closes: the status and message
            are reported, not "malformed reply"; exit 1, "ok" false
  usage     --help, a bad flag, --coordinator with redis, no server; no leak when the
            connections fail (under valgrind, when installed) (TARGET
            ignored)
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

KEY_SIZE = 32
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import brimtest as bt  # noqa: E402
import ports  # noqa: E402

SKIP = bt.SKIP


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def free_port():
    return ports.free_port()


def key_text(i):
    """The bench's key i at --key-size 32 (client/bench/workload.c)."""
    return "key:" + str(i).zfill(KEY_SIZE - 4)


class Server:
    """One server process on a free loopback port, stopped by PID."""

    def __init__(self, target, args, small=False):
        self.target = target
        # The port is free when picked but another test may take it before
        # the server binds: try again on a new one.
        for attempt in range(3):
            if self._start(args, small):
                return
        fail("%s did not start on 3 free ports" % target)

    def _command(self, args, small):
        target = self.target
        if target == "memcached":
            exe = shutil.which("memcached")
            cmd = [exe, "-l", "127.0.0.1", "-p", str(self.port), "-U", "0",
                   "-t", "1", "-m", "2" if small else "64"]
            if os.geteuid() == 0:
                cmd += ["-u", "root"]   # memcached refuses root without -u
        elif target == "redis":
            exe = shutil.which("redis-server")
            cmd = [exe, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no"]
            if small:
                cmd += ["--maxmemory", "2mb", "--maxmemory-policy",
                        "allkeys-random"]
        else:
            # 8 MiB: the smallest brim-node takes beside its partition
            # table, far below the evictions scenario's 16 MB of values.
            exe = args.node
            cmd = [exe, "--listen", "127.0.0.1:%d" % self.port,
                   "--standalone", "--memory-mb", "8" if small else "256"]
            cmd += getattr(args, "node_args", [])
        if exe is None or not os.access(exe, os.X_OK):
            print("SKIP: no %s binary on this machine" % target)
            sys.exit(SKIP)
        return cmd

    def _start(self, args, small):
        self.port = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        cmd = self._command(args, small)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                print("%s exited at start: %s" % (self.target,
                                                  " ".join(cmd)))
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return True
            except OSError:
                time.sleep(0.05)
        self.stop()
        print("%s did not listen within 10 s" % self.target)
        return False

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, 15)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, 9)
                self.proc.wait(5)


class TextClient:
    """A tiny memcached or redis client for the injectors."""

    def __init__(self, target, port):
        self.target = target
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.sock.settimeout(5)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _resp(self, *parts):
        out = b"*%d\r\n" % len(parts)
        for p in parts:
            out += b"$%d\r\n%s\r\n" % (len(p), p)
        self.sock.sendall(out)

    def get(self, key):
        k = key.encode()
        if self.target == "memcached":
            self.sock.sendall(b"get " + k + b"\r\n")
            line = self._line()
            if line == b"END":
                return None
            n = int(line.split()[3])
            data = self._exact(n + 2)[:n]
            if self._line() != b"END":
                raise OSError("memcached: no END after a value")
            return data
        self._resp(b"GET", k)
        line = self._line()
        if line == b"$-1":
            return None
        n = int(line[1:])
        return self._exact(n + 2)[:n]

    def set(self, key, value):
        k = key.encode()
        if self.target == "memcached":
            self.sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value),
                                                             value))
        else:
            self._resp(b"SET", k, value)
        self._line()

    def delete(self, key):
        k = key.encode()
        if self.target == "memcached":
            self.sock.sendall(b"delete " + k + b"\r\n")
        else:
            self._resp(b"DEL", k)
        self._line()


class BrimctlClient:
    """The injectors' client for brim-node: brimctl, one process per op."""

    def __init__(self, brimctl, addr):
        if brimctl is None or not os.access(brimctl, os.X_OK):
            print("SKIP: no brimctl to write behind brim-bench's back")
            sys.exit(SKIP)
        self.base = [brimctl, "--server", addr]

    def get(self, key):
        p = subprocess.run(self.base + ["get", key], capture_output=True,
                           timeout=10)
        return p.stdout if p.returncode == 0 else None

    def set(self, key, value):
        subprocess.run(self.base + ["set", key, value.decode()],
                       capture_output=True, timeout=10)

    def delete(self, key):
        subprocess.run(self.base + ["del", key], capture_output=True,
                       timeout=10)


def client_for(args, server):
    if server.target == "brim":
        return BrimctlClient(args.brimctl, server.addr)
    return TextClient(server.target, server.port)


def run_bench(args, server, flags, timeout=120):
    cmd = [args.bench, "--target", server.target, "--server", server.addr,
           "--quiet"] + flags
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write("$ %s\n%s" % (" ".join(cmd), p.stdout))
    sys.stdout.write(p.stderr)
    return p


def last_json(p):
    lines = p.stdout.strip().splitlines()
    if not lines:
        fail("brim-bench printed nothing")
    try:
        return json.loads(lines[-1])
    except ValueError:
        fail("the last line is not JSON: %r" % lines[-1])


def verdict(p):
    """lost, stale, errors from the 'lost=N stale=N errors=N' line."""
    lines = p.stdout.strip().splitlines()
    plain = [l for l in lines if not l.startswith("{")]
    m = re.fullmatch(r"lost=(\d+) stale=(\d+) errors=(\d+)",
                     plain[-1] if plain else "")
    if m is None:
        fail("no lost=N stale=N errors=N as the last plain line")
    return tuple(int(x) for x in m.groups())


def expect_exit(p, code):
    if p.returncode != code:
        fail("brim-bench exited %d, expected %d" % (p.returncode, code))


def expect_not_ok(p):
    """A failed run (exit 1) must not claim "ok": true in its JSON."""
    expect_exit(p, 1)
    if last_json(p).get("ok") is not False:
        fail("the run exited 1 but its JSON says ok: %r" %
             last_json(p).get("ok"))


def scenario_smoke(args, server):
    p = run_bench(args, server, ["--duration", "1", "--pipeline", "4",
                                 "--connections", "8", "--keys", "2000",
                                 "--json", "--server-pid",
                                 str(server.proc.pid)])
    expect_exit(p, 0)
    j = last_json(p)
    for k in ("ops_per_sec", "p50_us", "p99_us", "p999_us", "errors",
              "server_cpu_s_per_op"):
        if k not in j:
            fail("JSON has no %s" % k)
    if j["ops"] <= 0 or j["errors"] != 0 or j["hits"] != j["gets"]:
        fail("expected ops, no errors and every GET a hit after preload")
    if not (0 < j["p50_us"] <= j["p99_us"] <= j["p999_us"]):
        fail("percentiles out of order")
    p = run_bench(args, server, ["--ops", "3000", "--threads", "2",
                                 "--connections", "4", "--keys", "1000",
                                 "--value-size", "10-300", "--json",
                                 "--zipf", "0.99", "--get-ratio", "0.5"])
    expect_exit(p, 0)
    j = last_json(p)
    if j["ops"] != 3000:
        fail("--ops 3000 ran %d ops" % j["ops"])
    p = run_bench(args, server, ["--rate", "2000", "--duration", "1",
                                 "--connections", "4", "--keys", "1000",
                                 "--no-preload", "--json"])
    expect_exit(p, 0)
    j = last_json(p)
    if not 1000 <= j["ops"] <= 3000:
        fail("--rate 2000 for 1 s ran %d ops" % j["ops"])
    # --latency-log: a header, one line per measured reply, the count.
    fd, log = tempfile.mkstemp(prefix="bench-latlog.")
    os.close(fd)
    p = run_bench(args, server, ["--ops", "500", "--connections", "2",
                                 "--keys", "100", "--latency-log", log,
                                 "--json"])
    expect_exit(p, 0)
    with open(log) as f:
        lines = f.read().splitlines()
    os.unlink(log)
    t0 = int(lines[0].split("measuring from ")[1].split()[0])
    recs = [tuple(map(int, x.split())) for x in lines[1:-1]]
    if lines[-1] != "# end: 500 replies, 0 dropped" or len(recs) != 500:
        fail("--latency-log: expected 500 replies, got %r" % lines[-1])
    if min(r[0] for r in recs) < t0 or min(r[1] for r in recs) <= 0:
        fail("--latency-log: a send before the start, or a zero latency")
    # SIGINT ends the measured part early and reports it as usual; the
    # log's header line says the measured part has begun.
    fd, log = tempfile.mkstemp(prefix="bench-latlog.")
    os.close(fd)
    cmd = [args.bench, "--target", server.target, "--server", server.addr,
           "--quiet", "--rate", "1000", "--duration", "60", "--keys", "100",
           "--connections", "2", "--latency-log", log, "--json"]
    b = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while os.path.getsize(log) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        b.send_signal(signal.SIGINT)
        out, _ = b.communicate(timeout=10)
    finally:
        if b.poll() is None:
            b.kill()
            b.wait()
        os.unlink(log)
    j = json.loads(out.strip().splitlines()[-1])
    if b.returncode != 0 or not 0.3 <= j["duration_s"] <= 5 or j["ops"] == 0:
        fail("SIGINT: exit %d after %.1f s, %d ops (expected 0, about 0.5 s)"
             % (b.returncode, j["duration_s"], j["ops"]))


def scenario_verify(args, server):
    p = run_bench(args, server, ["--verify", "--duration", "3", "--keys",
                                 "2000", "--zipf", "0.99", "--pipeline", "4",
                                 "--connections", "8", "--get-ratio", "0.7",
                                 "--json"])
    expect_exit(p, 0)
    if verdict(p) != (0, 0, 0):
        fail("a healthy server should give lost=0 stale=0 errors=0")
    j = last_json(p)
    if (j["lost"], j["stale"], j["errors"]) != (0, 0, 0):
        fail("JSON disagrees with the verdict line")
    if j["reads_checked"] < 1000 or j["dels"] == 0:
        fail("too few reads checked or no deletes in the mix")


def with_injector(args, server, bench_flags, inject):
    """Run brim-bench while INJECT(client, stop) runs in a thread."""
    client = client_for(args, server)
    stop = threading.Event()
    errors = []

    def body():
        try:
            time.sleep(0.5)         # past the preload of a few keys
            inject(client, stop)
        except Exception as e:      # reported, not raised in the thread
            errors.append(e)

    th = threading.Thread(target=body)
    th.start()
    try:
        p = run_bench(args, server, bench_flags)
    finally:
        stop.set()
        th.join(30)
    if errors:
        fail("injector: %s" % errors[0])
    return p


def scenario_stale(args, server):
    # Old values this run wrote, written back later: the bench has since
    # written and had acknowledged newer ones, so reading them is stale.
    def inject(c, stop):
        rounds = 0
        while not stop.is_set() and rounds < 40:
            rounds += 1
            old = {i: c.get(key_text(i)) for i in range(5)}
            time.sleep(0.15)
            for i, v in old.items():
                if v is not None:
                    c.set(key_text(i), v)

    p = with_injector(args, server,
                      ["--verify", "--duration", "4", "--keys", "50",
                       "--zipf", "0.99", "--get-ratio", "0.5",
                       "--connections", "4", "--pipeline", "2", "--json"],
                      inject)
    expect_exit(p, 1)
    lost, stale, errors = verdict(p)
    if stale == 0:
        fail("values written behind the bench's back were not caught")
    if errors != 0:
        fail("errors=%d" % errors)
    if last_json(p)["stale"] != stale:
        fail("JSON disagrees with the verdict line")
    expect_not_ok(p)


def scenario_lost(args, server):
    # Deleted behind its back: the bench's last acknowledged write to the
    # key was a SET without TTL, so a miss is a lost key.
    def inject(c, stop):
        rounds = 0
        while not stop.is_set() and rounds < 40:
            rounds += 1
            for i in range(5):
                c.delete(key_text(i))
            time.sleep(0.1)

    p = with_injector(args, server,
                      ["--verify", "--duration", "4", "--keys", "50",
                       "--zipf", "0.99", "--get-ratio", "0.9",
                       "--del-ratio", "0", "--ttl-ratio", "0",
                       "--connections", "4", "--pipeline", "2", "--json"],
                      inject)
    expect_exit(p, 1)
    lost, stale, errors = verdict(p)
    if lost == 0:
        fail("keys deleted behind the bench's back were not caught")
    if stale != 0 or errors != 0:
        fail("stale=%d errors=%d" % (stale, errors))
    expect_not_ok(p)


def scenario_evictions(args, server):
    p = run_bench(args, server, ["--verify", "--duration", "1", "--keys",
                                 "40000", "--value-size", "400",
                                 "--connections", "4", "--pipeline", "8",
                                 "--json"])
    expect_not_ok(p)
    if "evicted" not in p.stdout:
        fail("the run should fail on the server's evictions")


def scenario_limits(args, server):
    """Started with --max-key-bytes 16 (see main)."""
    base = ["--ops", "10", "--keys", "10", "--json"]
    for flags, words in (
            (["--value-size", "2000000"],
             ["--value-size 2000000", "max_value_bytes 1048576"]),
            (["--value-size", "10-1048577"],
             ["--value-size 10-1048577", "MAX 1048577",
              "max_value_bytes 1048576"]),
            (["--key-size", "17"],
             ["--key-size 17", "max_key_bytes 16"])):
        p = run_bench(args, server, base + flags)
        expect_exit(p, 2)
        for w in words:
            if w not in p.stderr:
                fail("%s: stderr lacks %r" % (" ".join(flags), w))
        if p.stdout.strip():
            fail("%s: a refused run printed a report" % " ".join(flags))
    # At the limits exactly, the run goes through.
    p = run_bench(args, server, base + ["--value-size", "1048576",
                                        "--key-size", "16"])
    expect_exit(p, 0)
    if last_json(p)["ok"] is not True:
        fail("a clean run says ok: %r" % last_json(p)["ok"])
    # No error replies were needed to find out.
    if last_json(p)["errors"] != 0:
        fail("errors at the limits")


class FakeNode:
    """A brim node that answers HELLO with limits larger than its frame
    limit, then answers a frame above that limit as brim-node does
    (proto/PROTOCOL.md section 2): [TOOBIG, 0, message], then a close with
    the rest of the frame unread. Every connection has a thread; all are
    bounded by socket timeouts."""

    FRAME_MAX = (1 << 20) + (64 << 10)
    MESSAGE = "frame above max_frame_bytes"

    def __init__(self):
        import brimwire
        self.w = brimwire
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.target = "brim"
        self.stop_ev = threading.Event()
        self.refused = 0
        self.th = threading.Thread(target=self._accept)
        self.th.start()

    def _accept(self):
        while not self.stop_ev.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _exact(self, conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _serve(self, conn):
        w = self.w
        conn.settimeout(10)
        try:
            while True:
                n = struct.unpack(">I", self._exact(conn, 4))[0]
                if n > self.FRAME_MAX:
                    self.refused += 1
                    conn.sendall(w.frame(w.pack([w.ST["TOOBIG"], 0,
                                                 self.MESSAGE])))
                    return
                req = w.unpack(self._exact(conn, n))
                if req[0] != w.OP["HELLO"]:
                    conn.sendall(w.frame(w.pack([w.ST["BADREQ"], req[1],
                                                 "fake: HELLO only"])))
                    continue
                vmax = 4 << 20
                conn.sendall(w.frame(w.pack(
                    [0, req[1], 1, 1, 2, 1, 0, "fake", 250, vmax,
                     vmax + (64 << 10), 1024])))
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def stop(self):
        self.stop_ev.set()
        self.th.join(10)
        self.sock.close()


def scenario_refused(args, server):
    p = run_bench(args, server, ["--value-size", "2000000", "--ops", "10",
                                 "--keys", "10", "--connections", "2",
                                 "--no-preload", "--get-ratio", "0",
                                 "--json"], timeout=60)
    expect_not_ok(p)
    if server.refused == 0:
        fail("the fake node refused no frame: the test did not test")
    if "malformed reply" in p.stderr:
        fail("the node's error reply was taken for a malformed reply")
    if "TOOBIG" not in p.stderr or FakeNode.MESSAGE not in p.stderr:
        fail("the node's status and message were not reported")
    if last_json(p)["errors"] == 0:
        fail("no errors counted")


def valgrind_leaks(cmd):
    """Run CMD under valgrind; the text of its definite leaks, or None
    without valgrind or for an ASan binary (LeakSanitizer checks those at
    exit, and changes the exit status)."""
    vg = shutil.which("valgrind")
    if vg is None:
        return None
    with open(cmd[0], "rb") as f:
        if b"__asan_init" in f.read():
            return None
    p = subprocess.run([vg, "--leak-check=full", "--error-exitcode=99",
                        "--errors-for-leak-kinds=definite,indirect"] + cmd,
                       capture_output=True, text=True, timeout=120)
    sys.stdout.write("$ valgrind %s\n" % " ".join(cmd))
    if p.returncode == 99:
        return p.stderr
    if "LEAK SUMMARY" in p.stderr and "definitely lost: 0" not in p.stderr:
        return p.stderr
    return ""


def scenario_usage(args):
    p = subprocess.run([args.bench, "--help"], capture_output=True,
                       text=True, timeout=10)
    if p.returncode != 0 or not p.stdout.startswith("usage: brim-bench"):
        fail("--help")
    for bad, msg in ((["--pipeline", "0"], "--pipeline"),
                     (["--bogus"], "unknown option"),
                     (["--target", "mysql"], "--target"),
                     (["--value-size", "9-3"], "backwards"),
                     (["--target", "redis", "--coordinator", "127.0.0.1:1"],
                      "--coordinator needs --target brim")):
        p = subprocess.run([args.bench] + bad, capture_output=True,
                           text=True, timeout=10)
        if p.returncode != 2 or msg not in p.stderr:
            fail("%s: exit %d, stderr %r" % (bad, p.returncode, p.stderr))
    port = free_port()             # nothing listens there
    p = subprocess.run([args.bench, "--target", "redis", "--server",
                        "127.0.0.1:%d" % port, "--duration", "1"],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "refused" not in p.stderr:
        fail("no server: exit %d, stderr %r" % (p.returncode, p.stderr))
    # Nothing leaks when the connections fail: in the threads' setup
    # (redis: no HELLO first) and in the HELLO that asks for limits.
    for target in ("redis", "brim"):
        p = subprocess.run([args.bench, "--target", target, "--server",
                            "127.0.0.1:%d" % port, "--ops", "10", "--keys",
                            "5", "--connections", "2"],
                           capture_output=True, text=True, timeout=30)
        if (p.returncode != 1 or "refused" not in p.stderr
                or "LeakSanitizer" in p.stderr):
            fail("%s, no server: exit %d, stderr %r" % (target, p.returncode,
                                                        p.stderr))
        leaks = valgrind_leaks([args.bench, "--target", target, "--server",
                                "127.0.0.1:%d" % port, "--ops", "10",
                                "--keys", "5", "--connections", "2",
                                "--threads", "2"])
        if leaks is None:
            print("no valgrind, or an ASan build: valgrind check skipped")
        elif leaks:
            fail("%s, no server: leaks:\n%s" % (target, leaks[-3000:]))


def run(scenario, target, args):
    """Start TARGET's server (a fake node for "refused") and run SCENARIO
    against it; "usage" needs no server."""
    args.target = target
    if scenario == "usage":
        scenario_usage(args)
        return
    if scenario == "refused":
        server = FakeNode()
    else:
        if scenario == "limits":
            args.node_args = ["--max-key-bytes", "16"]
        server = Server(target, args, small=scenario == "evictions")
    try:
        globals()["scenario_" + scenario](args, server)
    finally:
        server.stop()


def cases():
    out = bt.Cases([("usage", ("usage", "redis"))])
    for target in ("memcached", "redis"):
        for scenario in ("smoke", "verify", "stale", "lost", "evictions"):
            out["%s.%s" % (scenario, target)] = (scenario, target)
    for scenario in ("smoke", "verify", "stale", "lost", "evictions",
                     "limits"):
        out["%s.brim" % scenario] = (scenario, "brim")
    out["refused.brim"] = ("refused", "brim")      # a fake node in here
    return out


CASES = cases()


def main():
    return bt.main(CASES, options=[("--bench", {}), ("--node", {}),
                                   ("--brimctl", {})], need=["bench"],
                   run=lambda which, args: run(which[0], which[1], args))


if __name__ == "__main__":
    sys.exit(main())
