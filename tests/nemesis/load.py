"""load.py - what the run writes and checks: the imported data set
(JSON lines for `brimctl import` and `brimctl verify`), the records at
the value limit that the bigvals fault imports mid-migration, a direct
reader that finds exactly which imported keys are missing or different
(so that losses can be tied to partitions and epochs), and brim-bench
--verify run in back-to-back segments for the whole run.
"""

import json
import os
import random
import socket
import subprocess
import threading
import time

from cluster import OWNER_NONE, bt, bw, die_with_parent


ALPHA = b"abcdefghijklmnopqrstuvwxyz0123456789"


def partition(seed, P, key):
    """DESIGN.md section 3: XXH3-64 of the key with the cluster seed, low
    bits."""
    return bt.partition(key, seed, P)


def filler(seed, size=(1 << 20) + 8192):
    """SIZE bytes of [a-z0-9] (no JSON escaping) from SEED: a random 4 KiB
    block repeated (different records start at different offsets)."""
    r = random.Random(seed)
    block = bytes(r.choice(ALPHA) for _ in range(4093))
    return (block * (size // len(block) + 1))[:size]


class Dataset:
    """Records key -> value bytes, written as one JSON lines file. Values
    are regenerated from (sizes, seed) when checked, not kept."""

    def __init__(self, path, prefix, sizes, seed):
        self.path = path
        self.prefix = prefix.encode()
        self.sizes = list(sizes)
        self.fill = filler(seed)
        self.n = len(self.sizes)
        self.bytes = sum(self.sizes)

    def key(self, i):
        return b"%s%d" % (self.prefix, i)

    def value(self, i):
        """Record I's value: its index, then filler, SIZES[I] bytes."""
        size = self.sizes[i]
        head = b"%d:" % i
        room = len(self.fill) - size - 1
        off = (i * 7919) % room if room > 0 else 0
        return (head + self.fill[off:off + size])[:size]

    def write(self):
        with open(self.path, "wb") as f:
            for i in range(self.n):
                f.write(b'{"key":"' + self.key(i) + b'","value":"'
                        + self.value(i) + b'"}\n')

    def index(self):
        """key -> record index."""
        return {self.key(i): i for i in range(self.n)}


def import_file(cl, ds, timeout=300):
    rc, out, err = cl.brimctl("import", ds.path, "--format", "jsonl",
                              timeout=timeout)
    last = out.strip().splitlines()[-1] if out.strip() else err.strip()
    return rc, last


def verify_file(cl, ds, timeout=300):
    """brimctl verify: (ok, the line it printed, the first bad keys)."""
    rc, out, err = cl.brimctl("verify", ds.path, "--format", "jsonl",
                              timeout=timeout)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    ok = rc == 0 and last == "verified %d/%d" % (ds.n, ds.n)
    return ok, last or err.strip()[:200], err.strip().splitlines()[:10]


def direct_read(topo, ds, node_ports, batch=64):
    """GET every key of DS (a Dataset) from its owner in TOPO,
    pipelined BATCH at a time per owner. Returns (missing keys, different
    keys, keys that could not be read (an error or a redirect))."""
    expected = ds.index()
    by_owner = {}
    for k in expected:
        p = partition(topo["seed"], topo["P"], k)
        o = topo["owner"][p]
        name = topo["members"][o] if o != OWNER_NONE else None
        by_owner.setdefault(name, []).append(k)
    missing, different, unread = [], [], []
    for name, keys in by_owner.items():
        if name is None or name not in node_ports:
            unread += keys
            continue
        try:
            c = bw.Conn(node_ports[name], timeout=10.0)
        except OSError:
            unread += keys
            continue
        try:
            for i in range(0, len(keys), batch):
                chunk = keys[i:i + batch]
                c.send(b"".join(bw.frame(bw.pack([bw.OP["GET"], j + 1,
                                                  topo["epoch"], k]))
                                for j, k in enumerate(chunk)))
                for k in chunk:
                    rep = c.reply()
                    if rep[0] == bw.ST["NOTFOUND"]:
                        missing.append(k)
                    elif rep[0] != 0:
                        unread.append(k)
                    elif bytes(rep[2]) != ds.value(expected[k]):
                        different.append(k)
        except (OSError, bw.Closed, socket.timeout):
            unread += keys
        finally:
            c.close()
    return missing, different, unread


class Bench:
    """brim-bench --verify against the coordinator, in segments of
    SEGMENT_S seconds one after the other until stop() (each preloads its
    key space, so every key is judged from the segment's start). A
    segment that could not start because the coordinator was down is
    started again."""

    # A killed node stays in the map until the coordinator declares it
    # dead (dead-after, more if the coordinator is down too); until then
    # a segment cannot preload its keys. Retry that long, bounded.
    KILL_GRACE_S = 45.0

    def __init__(self, cl, plan, args, log, last_kill=lambda: None):
        self.cl = cl
        self.last_kill = last_kill  # time.monotonic() of the last kill
        self.plan = plan
        self.a = args
        self.log = log
        self.results = []           # one dict per finished segment
        self.failures = []          # segments without a JSON line
        self.stopping = threading.Event()
        self.coord_ok = threading.Event()
        self.coord_ok.set()
        self.proc = None
        self.seg_started = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        """No new segment; the one running ends on its own time."""
        self.stopping.set()

    def kill(self):
        p = self.proc
        if p is not None and p.poll() is None:
            p.kill()

    def join(self, timeout):
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def remaining_s(self):
        if self.seg_started is None:
            return 0.0
        return max(0.0, self.a.segment_s -
                   (time.monotonic() - self.seg_started))

    def cmd(self, seg):
        b = self.plan.bench
        return [os.path.join(self.cl.bin, "brim-bench"),
                "--coordinator", self.cl.caddr, "--verify",
                "--key-prefix", "nb:",
                "--keys", str(b["keys"]), "--value-size", b["value_size"],
                "--get-ratio", str(b["get_ratio"]),
                "--rate", str(b["rate"]), "--connections", "4",
                "--duration", str(self.a.segment_s),
                "--timeout", str(self.a.bench_timeout_ms),
                "--seed", str(self.plan.seed * 1000 + seg),
                "--json", "--quiet"]

    def _run(self):
        seg = 0
        tries = 0
        while not self.stopping.is_set():
            self.coord_ok.wait(30)
            seg_log = os.path.join(self.cl.dir, "bench.%d.log" % seg)
            t0 = time.monotonic()
            self.seg_started = t0
            with open(seg_log, "wb") as f:
                self.proc = subprocess.Popen(
                    self.cmd(seg), stdout=f, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                    preexec_fn=die_with_parent)
                rc = self.proc.wait()
            res = None
            with open(seg_log, errors="replace") as f:
                lines = f.read().splitlines()
            for line in reversed(lines):
                if line.startswith("{"):
                    try:
                        res = json.loads(line)
                    except ValueError:
                        pass
                    break
            if res is None:
                # No JSON: it could not start (the coordinator down or
                # paused right then is the one excuse, a few times).
                k = self.last_kill()
                after_kill = (k is not None and
                              time.monotonic() - k < self.KILL_GRACE_S)
                if time.monotonic() - t0 < 5 and (tries < 5 or after_kill):
                    tries += 1
                    self.log("bench segment %d did not start (exit %d: %s);"
                             " again" % (seg, rc, " | ".join(lines[-2:])))
                    time.sleep(1.0)
                    continue
                self.failures.append((seg, rc, lines[-5:]))
                self.log("bench segment %d ended without a result (exit "
                         "%d): %s" % (seg, rc, " | ".join(lines[-3:])))
            else:
                res["segment"] = seg
                res["exit"] = rc
                res["t_start"] = t0
                res["t_end"] = time.monotonic()
                res["findings"] = [x for x in lines if not
                                   x.startswith("{")][-12:]
                self.results.append(res)
                self.log("bench segment %d: lost=%s stale=%s errors=%s "
                         "reads_checked=%s sets=%s evictions=%s epoch %s->%s"
                         " exit %d" % (seg, res.get("lost"), res.get("stale"),
                                       res.get("errors"),
                                       res.get("reads_checked"),
                                       res.get("sets"),
                                       res.get("evictions"),
                                       res.get("epoch_first"),
                                       res.get("epoch_last"), rc))
            seg += 1
            tries = 0
        self.seg_started = None
