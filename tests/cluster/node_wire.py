#!/usr/bin/env python3
"""node_wire.py - process-level wire tests of brim-node (CTest node.<case>).

Each case starts `brim-node --standalone` on a free loopback port, talks to
it over real sockets, and stops it by PID (SIGTERM, then SIGKILL) in a
finally block; the node must then have exited 0 with no sanitizer report in
its output. Cases I10 to I13 are those of shared/cases/inputs.md. Every loop
is bounded in count and time; no figure of speed is asserted, only events
and bounds with generous wall-clock guards.

Usage: node_wire.py --node PATH/TO/brim-node CASE
       node_wire.py --list      (the cases; CMake registers one test each)
"""

import os
import random
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
import brimtest as bt                                    # noqa: E402
import brimwire as bw                                    # noqa: E402
from brimwire import ST                                  # noqa: E402

MIB = 1 << 20
KIB = 1 << 10

CASES = bt.Cases()
case = CASES


def check(cond, msg, *args):
    if not cond:
        raise AssertionError(msg % args if args else msg)


def status_name(s):
    return bw.ST_NAME.get(s, str(s))


def expect_status(rep, want, what):
    check(isinstance(rep, list) and len(rep) >= 2,
          "%s: reply %r is not [status, id, ...]", what, rep)
    check(rep[0] == ST[want], "%s: status %s, want %s (reply %r)", what,
          status_name(rep[0]), want, rep[:3])


def ping_ok(node, conn=None, bound_s=2.0, what="PING"):
    """A PING answered within BOUND_S on CONN (or a fresh connection)."""
    own = conn is None
    c = conn or node.conn(do_hello=False)
    try:
        t0 = time.monotonic()
        rep = c.call("PING", 4242, timeout=bound_s)
        dt = time.monotonic() - t0
        expect_status(rep, "OK", what)
        check(rep[1] == 4242, "%s: reply id %r", what, rep[1])
        return dt
    finally:
        if own:
            c.close()


def read_outcome(c, timeout=5.0):
    """The frames C gets within TIMEOUT and whether it was closed."""
    frames = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            frames.append(bw.unpack(c.frame(max(0.05, deadline -
                                                time.monotonic()))))
        except bw.Closed:
            return frames, True
        except socket.timeout:
            break
    return frames, False


def one_reply_or_close(c, what, allowed, timeout=5.0):
    """C must answer one error frame with a status in ALLOWED, or close."""
    try:
        rep = c.reply(timeout)
    except bw.Closed:
        return None
    check(isinstance(rep, list) and len(rep) >= 2 and rep[0] in
          [ST[a] for a in allowed], "%s: reply %r, want one of %s or a close",
          what, rep, allowed)
    return rep


def rss_bound(node, before_kib, what, bound_kib):
    grew = node.rss_kib() - before_kib
    check(grew < bound_kib, "%s: RSS grew by %d KiB, bound %d KiB", what,
          grew, bound_kib)


def wait_for(cond, timeout, what, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out after %.1f s waiting for %s" %
                         (timeout, what))


# ---- I10: huge lengths ----

I10_RSS_BOUND_KIB = 4 * KIB             # "less than a few MiB"


def i10_setup(node):
    other = node.conn()                 # a bystander, served throughout
    ping_ok(node, other, what="bystander PING before")
    return other, node.rss_kib()


def i10_after(node, other, rss0, what):
    ping_ok(node, other, what="bystander PING after " + what)
    ping_ok(node, what="fresh PING after " + what)
    rss_bound(node, rss0, what, I10_RSS_BOUND_KIB)


@case
def i10_huge_header(args):
    node = bw.Node(args.node)
    try:
        other, rss0 = i10_setup(node)
        c = node.conn()
        c.send(b"\xff\xff\xff\xff")     # body of 4 GiB - 1 announced
        frames, closed = read_outcome(c, 5.0)
        check(closed, "header 0xffffffff: connection not closed (frames "
              "%r)", frames)
        for f in frames:
            expect_status(f, "TOOBIG", "header 0xffffffff")
        c.close()
        # The same header after a good request in the same write: the good
        # one is answered first.
        c = node.conn()
        c.send(bw.req("PING", 7) + b"\xff\xff\xff\xff" + b"x" * 1000)
        frames, closed = read_outcome(c, 5.0)
        check(closed and len(frames) >= 1 and frames[0][:2] == [0, 7],
              "PING then a huge header: frames %r, closed %r", frames, closed)
        for f in frames[1:]:
            expect_status(f, "TOOBIG", "huge header after PING")
        c.close()
        i10_after(node, other, rss0, "header 0xffffffff")
        other.close()
    finally:
        finish(node)


@case
def i10_huge_array(args):
    node = bw.Node(args.node)
    try:
        other, rss0 = i10_setup(node)
        for body in (b"\xdd\xff\xff\xff\xff",        # array of 2^32 - 1
                     b"\xdf\xff\xff\xff\xff",        # map of 2^32 - 1
                     b"\x93\xdd\xff\xff\xff\xff\x01\x00",  # nested
                     b"\xdc\xff\xff"):               # array16 of 65535
            c = node.conn()
            c.send(bw.frame(body))
            rep = one_reply_or_close(c, "body %s" % body.hex(), ["BADREQ"])
            if rep is not None:
                # Answered, not closed: the connection still works.
                ping_ok(node, c, what="same connection after %s" %
                        body.hex())
            c.close()
        i10_after(node, other, rss0, "array of 4G elements")
        other.close()
    finally:
        finish(node)


@case
def i10_huge_bin_close(args):
    node = bw.Node(args.node)
    try:
        other, rss0 = i10_setup(node)
        # A whole 5-byte body, bin32 claiming 4 GiB - 2 bytes, then close
        # at once: the reply meets a closed socket.
        for _ in range(20):
            c = node.conn()
            c.send(bw.frame(b"\xc6\xff\xff\xff\xfe"))
            c.close()
        # The same with RST, and with a header promising a body that never
        # comes (the node must not wait for or allocate it).
        for hdr in (5, 1000, 65536):
            c = node.conn()
            c.send(struct.pack(">I", hdr) + b"\xc6\xff\xff\xff\xfe")
            c.reset()
        c = node.conn()
        c.send(bw.frame(b"\xc6\xff\xff\xff\xfe"))
        rep = one_reply_or_close(c, "bin32 of 4G", ["BADREQ"])
        if rep is not None:
            ping_ok(node, c, what="same connection after bin32 of 4G")
        c.close()
        i10_after(node, other, rss0, "bin of 4 GiB then close")
        st = bw.stats(other)
        wait_for(lambda: bw.stats(other)["connections"] == 1, 5.0,
                 "the closed connections to go (stats %r)" % st)
        other.close()
    finally:
        finish(node)


@case
def i10_value_over_max(args):
    node = bw.Node(args.node, "--max-value-bytes", 4096)
    try:
        other, rss0 = i10_setup(node)
        c = node.conn()
        rep = c.call("SET", 10, b"k-over", b"v" * 4097, 0, 0)
        expect_status(rep, "TOOBIG", "SET of max + 1")
        check(rep[1] == 10, "TOOBIG reply carries id %r", rep[1])
        expect_status(c.call("GET", 11, b"k-over"), "NOTFOUND",
                      "GET after the oversized SET")
        # The connection goes on, and exactly the maximum is stored.
        expect_status(c.call("SET", 12, b"k-max", b"m" * 4096, 0, 0), "OK",
                      "SET of exactly max")
        rep = c.call("GET", 13, b"k-max")
        expect_status(rep, "OK", "GET k-max")
        check(rep[2] == b"m" * 4096, "GET k-max: %d bytes", len(rep[2]))
        # APPEND past the max: TOOBIG, value unchanged.
        expect_status(c.call("APPEND", 14, b"k-max", b"x"), "TOOBIG",
                      "APPEND past max")
        check(len(c.call("GET", 15, b"k-max")[2]) == 4096, "k-max changed")
        check(bw.stats(c)["keys"] == 1, "keys != 1 after the TOOBIG SET")
        c.close()
        i10_after(node, other, rss0, "SET of max + 1")
        other.close()
    finally:
        finish(node)


# ---- I11: split and joined frames ----

def set_get_ping(rid):
    """Three requests; returns (bytes, checker of the three replies)."""
    key = b"key-%d" % rid
    data = (bw.req("SET", rid, key, b"val-%d" % rid, 0, 9) +
            bw.req("GET", rid + 1, key) + bw.req("PING", rid + 2))

    def verify(reps):
        check([r[1] for r in reps] == [rid, rid + 1, rid + 2],
              "replies out of order or ids wrong: %r", reps)
        expect_status(reps[0], "OK", "SET")
        expect_status(reps[1], "OK", "GET")
        check(reps[1][2] == b"val-%d" % rid and reps[1][3] == 9,
              "GET returned %r", reps[1])
        expect_status(reps[2], "OK", "PING")
    return data, verify


@case
def i11_joined(args):
    node = bw.Node(args.node)
    try:
        c = node.conn()
        data, verify = set_get_ping(100)
        c.send(data)                    # three requests, one write
        verify([c.reply() for _ in range(3)])
        # 300 requests in one write: all answered, in order.
        reqs = b"".join(bw.req("SET", 1000 + i, b"j%d" % i, b"v%d" % i, 0, 0)
                        + bw.req("GET", 2000 + i, b"j%d" % i)
                        for i in range(150))
        c.send(reqs)
        for i in range(150):
            a, b = c.reply(), c.reply()
            check(a[:2] == [0, 1000 + i] and b[:3] == [0, 2000 + i,
                                                       b"v%d" % i],
                  "pipelined pair %d: %r %r", i, a, b)
        c.close()
    finally:
        finish(node)


@case
def i11_byte_at_a_time(args):
    node = bw.Node(args.node)
    try:
        c = node.conn()
        data, verify = set_get_ping(200)
        for i in range(len(data)):      # bounded by the request's size
            c.send(data[i:i + 1])
            time.sleep(0.002)           # separate segments, separate reads
        verify([c.reply() for _ in range(3)])
        # A 20 KiB value a byte at a time would take long; 1 KiB chunks.
        big = bw.req("SET", 300, b"big", bytes(range(256)) * 80, 0, 0)
        for i in range(0, len(big), 1000):
            c.send(big[i:i + 1000])
            time.sleep(0.002)
        expect_status(c.reply(), "OK", "SET of 20 KiB in chunks")
        rep = c.call("GET", 301, b"big")
        check(rep[2] == bytes(range(256)) * 80, "big value differs")
        c.close()
    finally:
        finish(node)


@case
def i11_split_after_length(args):
    node = bw.Node(args.node)
    try:
        c = node.conn()
        data, verify = set_get_ping(400)
        first = bw.req("SET", 400, b"key-400", b"val-400", 0, 9)
        # The first frame split right after its length, the rest joined.
        c.send(first[:4])
        time.sleep(0.2)
        c.send(first[4:] + data[len(first):])
        verify([c.reply() for _ in range(3)])
        # The length itself split, then a body split in the middle.
        data, verify = set_get_ping(500)
        c.send(data[:2])
        time.sleep(0.1)
        c.send(data[2:9])
        time.sleep(0.1)
        c.send(data[9:])
        verify([c.reply() for _ in range(3)])
        # A frame split right after its length, then the next frame's
        # length arrives with the body (two frames, three writes).
        p1, p2 = bw.req("PING", 601), bw.req("PING", 602)
        c.send(p1[:4])
        time.sleep(0.1)
        c.send(p1[4:] + p2[:4])
        time.sleep(0.1)
        c.send(p2[4:])
        check([c.reply()[1], c.reply()[1]] == [601, 602], "PING ids")
        c.close()
    finally:
        finish(node)


@case
def i11_half_then_close(args):
    node = bw.Node(args.node)
    try:
        setf = bw.req("SET", 700, b"half", b"h" * 5000, 0, 0)
        for cut in (2, 4, 5, len(setf) // 2, len(setf) - 1):
            c = node.conn()
            c.send(bw.req("PING", 699) + setf[:cut])
            rep = c.reply()
            check(rep[:2] == [0, 699], "PING before the half frame: %r", rep)
            c.close()
        c = node.conn()
        c.send(setf[:len(setf) // 2])
        c.reset()
        c2 = node.conn()
        wait_for(lambda: bw.stats(c2)["connections"] == 1, 5.0,
                 "the half-frame connections to close")
        expect_status(c2.call("GET", 701, b"half"), "NOTFOUND",
                      "GET after half SETs")
        check(bw.stats(c2)["sets"] == 0, "a half SET was applied")
        # And the whole frame does store.
        c2.send(setf)
        expect_status(c2.reply(), "OK", "whole SET")
        expect_status(c2.call("GET", 702, b"half"), "OK", "GET after SET")
        c2.close()
    finally:
        finish(node)


# ---- I12: malformed msgpack ----

def cpu_quiet(node, what, bound_s=0.1, span_s=1.0):
    """The node's CPU time over SPAN_S grows by less than BOUND_S."""
    t0 = node.cpu_s()
    time.sleep(span_s)
    used = node.cpu_s() - t0
    check(used < bound_s, "%s: %.3f s of CPU in %.1f s idle (spinning?)",
          what, used, span_s)


MALFORMED = [
    b"\xc1",                            # reserved byte
    b"\x81\xc1\x00",                    # map with a reserved key
    b"\x05",                            # a bare integer
    b"\xcd\x01\x00",                    # a bare uint16
    b"\xa3abc",                         # a bare string
    b"\x82\x01\x02\x03\x04",            # a map, not an array
    b"\x92\x02\x01",                    # array of 2: too short
    b"\x93\xa1x\x01\x00",               # op not an integer
    b"\x93\x02\xa1x\x00",               # id not an integer
    b"\x93\x02\x01\xff",                # negative epoch
    b"\x93\x02\x01",                    # truncated array
    b"\x93\x02\x01\x00\x00",            # trailing byte
    b"\x91" * 40 + b"\x00",             # nested 40 deep
    b"\x94\x0a\x01\x00\xc0",            # GET with nil key
    b"\x94\x0a\x01\x00\xca\x00\x00\x00\x00",  # GET with a float key
    b"\x95\x0d\x01\x00\xa1k\xa1v",      # SET with too few args
    b"",                                # empty body
]


@case
def i12_malformed(args):
    node = bw.Node(args.node)
    try:
        other = node.conn()
        for body in MALFORMED:
            what = "body %s" % (body.hex() or "(empty)")
            c = node.conn()
            c.send(bw.frame(body))
            rep = one_reply_or_close(c, what, ["BADREQ"])
            if rep is not None:
                ping_ok(node, c, what="same connection after " + what)
            c.close()
            ping_ok(node, other, what="bystander PING after " + what)
        # All of them on one connection, back to back, then a PING.
        c = node.conn()
        c.send(b"".join(bw.frame(b) for b in MALFORMED) + bw.req("PING", 77))
        got = 0
        while True:
            try:
                rep = c.reply(5.0)
            except bw.Closed:
                break
            if rep[:2] == [0, 77]:
                break
            expect_status(rep, "BADREQ", "batched malformed bodies")
            got += 1
            check(got <= len(MALFORMED), "more replies than frames")
        c.close()
        st = bw.stats(other)
        check(st["bad_requests"] >= len(MALFORMED),
              "bad_requests %d < %d", st["bad_requests"], len(MALFORMED))
        ping_ok(node, what="fresh PING after malformed bodies")
        cpu_quiet(node, "after malformed bodies")
        other.close()
    finally:
        finish(node)


def random_bodies(rng, n):
    """N seeded random frame bodies of several kinds."""
    valid = [bw.req_body("SET", 5, b"rk", b"value", 0, 0),
             bw.req_body("GET", 6, b"rk"),
             bw.req_body("MGET", 7, [b"a", b"b", b"c"]),
             bw.req_body("CAS", 8, b"rk", b"v", 0, 0, 99),
             bw.req_body("INCR", 9, b"n", 5),
             bw.req_body("HELLO", 10, 1, 0, 1, 0)]
    prefixes = [b"\xdd", b"\xdf", b"\xdc", b"\xde", b"\xc6", b"\xc5",
                b"\xdb", b"\xc9", b"\x9f", b"\x8f"]
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:                   # random bytes
            body = bytes(rng.getrandbits(8)
                         for _ in range(rng.randint(1, 64)))
        elif kind == 1:                 # a valid request, mutated
            body = bytearray(rng.choice(valid))
            for _ in range(rng.randint(1, 4)):
                body[rng.randrange(len(body))] = rng.getrandbits(8)
            body = bytes(body)
        elif kind == 2:                 # a valid request, truncated/extended
            v = rng.choice(valid)
            cut = rng.randint(1, len(v))
            body = v[:cut] + bytes(rng.getrandbits(8)
                                   for _ in range(rng.randint(0, 3)))
        else:                           # a container claiming a huge count
            body = (rng.choice(prefixes) +
                    bytes(rng.getrandbits(8)
                          for _ in range(rng.randint(0, 12))))
        out.append(body)
    return out


@case
def i12_random_frames(args):
    seed = int(os.environ.get("BRIM_TEST_SEED", "1212"))
    rng = random.Random(seed)
    bodies = random_bodies(rng, 1000)
    node = bw.Node(args.node)
    try:
        other = node.conn()
        c = node.conn()
        counts = {}
        closes = 0
        t_end = time.monotonic() + 60   # wall-clock guard for the loop
        for i, body in enumerate(bodies):
            check(time.monotonic() < t_end, "1,000 frames took over 60 s")
            try:
                strict = bw.strict_unpack(body)
                malformed = False
            except bw.CodecError:
                strict, malformed = None, True
            if not malformed and not (isinstance(strict, list)
                                      and len(strict) >= 3):
                malformed = True        # valid msgpack, not a request
            what = "seed %d frame %d body %s" % (seed, i, body.hex())
            c.send(bw.frame(body))
            try:
                rep = c.reply(5.0)
            except bw.Closed:
                closes += 1
                c.close()
                c = node.conn()
                continue
            except socket.timeout:
                raise AssertionError("%s: no reply in 5 s" % what)
            check(isinstance(rep, list) and len(rep) >= 2
                  and isinstance(rep[0], int)
                  and 0 <= rep[0] <= bw.WIRE_STATUS_MAX,
                  "%s: reply %r", what, rep)
            if malformed:
                expect_status(rep, "BADREQ", what)
            counts[rep[0]] = counts.get(rep[0], 0) + 1
        c.close()
        print("seed %d: replies by status %s, closes %d" %
              (seed, {status_name(k): v for k, v in counts.items()}, closes))
        check(counts.get(ST["BADREQ"], 0) >= 500,
              "seed %d: only %d BADREQ of 1000 random frames", seed,
              counts.get(ST["BADREQ"], 0))
        ping_ok(node, other, what="bystander PING right after")
        cpu_quiet(node, "after 1,000 random frames")
        other.close()
    finally:
        finish(node)


# ---- I13: slow reader ----

I13_MEMORY_MB = 64
I13_GETS = 100000
I13_VALUE = 64 * KIB


def sender(sock, data, result):
    """Send DATA until done, or until a send blocks for the socket's
    timeout (the node stopped reading), or the node drops us."""
    sent = 0
    try:
        view = memoryview(data)
        while sent < len(data):
            n = sock.send(view[sent:sent + 256 * KIB])
            sent += n
        result["outcome"] = "all sent"
    except socket.timeout:
        result["outcome"] = "blocked"
    except OSError as e:
        result["outcome"] = "dropped: %s" % e
    result["sent"] = sent


@case
def i13_slow_reader(args):
    node = bw.Node(args.node, "--memory-mb", I13_MEMORY_MB)
    try:
        admin = node.conn()
        expect_status(admin.call("SET", 2, b"big", os.urandom(I13_VALUE), 0,
                                 0), "OK", "SET 64 KiB")
        st0 = bw.stats(admin)
        rss0 = node.rss_kib()
        mem0 = st0["process_bytes"]
        print("before: RSS %d KiB, process_bytes %d, limit %d" %
              (rss0, mem0, st0["memory_limit"]))

        slow = node.conn()
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KIB)
        get = bw.req("GET", 3, b"big")
        data = get * I13_GETS           # 100,000 pipelined GETs, ~1.4 MB
        slow.sock.settimeout(3.0)       # a send blocked 3 s: node paused
        result = {}
        th = threading.Thread(target=sender, args=(slow.sock, data, result),
                              daemon=True)
        th.start()

        # While it is stuck: PINGs are answered promptly, the node paused
        # reading from it, and its memory stays bounded.
        worst_rss = rss0
        worst_mem = mem0
        pings = []
        deadline = time.monotonic() + 30
        while th.is_alive() and time.monotonic() < deadline:
            pings.append(ping_ok(node, admin, bound_s=2.0,
                                 what="PING beside the slow reader"))
            worst_rss = max(worst_rss, node.rss_kib())
            worst_mem = max(worst_mem, bw.stats(admin)["process_bytes"])
            time.sleep(0.1)
        th.join(10)
        check(not th.is_alive(), "the sender thread did not finish")
        # The sends may all fit in the sockets' buffers; the node still
        # has to pause once its output passes the limit.
        wait_for(lambda: bw.stats(admin)["read_pauses"] > 0, 10,
                 "read_pauses > 0")
        for _ in range(10):
            pings.append(ping_ok(node, admin, bound_s=2.0,
                                 what="PING beside the stalled reader"))
            worst_rss = max(worst_rss, node.rss_kib())
            worst_mem = max(worst_mem, bw.stats(admin)["process_bytes"])
            time.sleep(0.1)
        st1 = bw.stats(admin)
        print("sender: %s after %d of %d bytes; read_pauses %d; PINGs %d, "
              "slowest %.3f s; worst RSS %d KiB, worst process_bytes %d" %
              (result.get("outcome"), result.get("sent", 0), len(data),
               st1["read_pauses"], len(pings), max(pings), worst_rss,
               worst_mem))
        check(result.get("outcome") != "all sent" or st1["read_pauses"] > 0,
              "all 100,000 GETs were taken without a pause")
        check(st1["read_pauses"] > 0, "read_pauses is 0: the node never "
              "paused reading from the slow reader")
        # Stalled: the node takes no more requests from it. Between two
        # STATS on the admin connection exactly one request (the second
        # STATS) is counted.
        r1 = bw.stats(admin)["requests"]
        time.sleep(0.5)
        r2 = bw.stats(admin)["requests"]
        check(r2 - r1 == 1, "the node still takes the slow reader's "
              "requests while its output is full: %d in 0.5 s", r2 - r1 - 1)
        # The node's own memory count stays under its limit. Its growth is
        # the output queue: reading pauses once unsent replies pass
        # --output-limit-kb (4 MiB) and at most one more 64 KiB reply is
        # added, but the queue's buffers grow by doubling and are counted
        # at capacity, so up to twice that: 8 MiB + a reply + a read chunk.
        check(worst_mem <= st0["memory_limit"],
              "process_bytes %d above the memory limit %d", worst_mem,
              st0["memory_limit"])
        check(worst_mem - mem0 <= 9 * MIB,
              "process_bytes grew by %d bytes with one slow reader",
              worst_mem - mem0)
        # RSS: the limit plus a margin. Measured (plain build): about
        # 2.3 MiB at start and 6.5 MiB stalled (the 4 MiB output queue;
        # process_bytes counts ~8 MiB because it counts the queue's buffer
        # capacity, not touched pages). 32 MiB of margin over 64 MiB
        # leaves room for allocator behaviour, none for a queue that grows
        # with the 6.5 GB of replies asked for.
        rss_limit = (I13_MEMORY_MB + 32) * KIB
        if node.sanitized:
            rss_limit += 64 * KIB       # shadow memory, redzones
        check(worst_rss < rss_limit, "RSS %d KiB, bound %d KiB", worst_rss,
              rss_limit)

        # Reset the slow connection with writes pending: no crash, no leak.
        slow.reset()
        ping_ok(node, admin, what="PING after the reset")
        ping_ok(node, what="fresh PING after the reset")
        wait_for(lambda: bw.stats(admin)["connections"] == 1, 10,
                 "the reset connection to be closed")
        mem2 = wait_for(lambda: (lambda m: m if m <= mem0 + 256 * KIB
                                 else None)(bw.stats(admin)["process_bytes"]),
                        10, "process_bytes to return near %d" % mem0)
        print("after the reset: process_bytes %d (before %d)" % (mem2, mem0))
        expect_status(admin.call("GET", 5, b"big"), "OK", "GET after")
        admin.close()
    finally:
        finish(node)


# ---- connection limits ----

@case
def max_conns(args):
    node = bw.Node(args.node, "--max-conns", 4)
    try:
        first = [node.conn()]
        # Node's readiness probe must be gone before the count matters.
        wait_for(lambda: bw.stats(first[0])["connections"] == 1, 5,
                 "only one connection open")
        first += [node.conn() for _ in range(3)]
        for i, c in enumerate(first):
            ping_ok(node, c, what="connection %d of 4" % (i + 1))
        extra = []
        for i in range(2):
            c = bw.Conn(node.port, do_hello=False)
            frames = c.wait_closed(5.0)
            check(len(frames) == 1, "extra connection %d: frames %r",
                  i + 1, frames)
            expect_status(frames[0], "BUSY", "extra connection %d" % (i + 1))
            extra.append(c)
        for i, c in enumerate(first):
            ping_ok(node, c, what="connection %d after the refusals"
                    % (i + 1))
        st = bw.stats(first[0])
        check(st["connections_refused"] == 2, "connections_refused %d",
              st["connections_refused"])
        check(st["connections"] == 4, "connections %d", st["connections"])
        # Close one: a new connection is then accepted.
        first[3].close()
        wait_for(lambda: bw.stats(first[0])["connections"] == 3, 5,
                 "the closed connection to go")
        c = node.conn()
        ping_ok(node, c, what="a connection after one closed")
        for c2 in first[:3] + extra + [c]:
            c2.close()
    finally:
        finish(node)


@case
def idle_timeout(args):
    node = bw.Node(args.node, "--idle-timeout", 2)
    try:
        silent = bw.Conn(node.port, do_hello=False)     # sends nothing
        helloed = node.conn()                           # says HELLO, then
        t0 = time.monotonic()                           # nothing
        busy = node.conn()
        closed = {}
        # The node sweeps once a second and closes what has been silent
        # for more than the 2 s timeout: measured ~3.0 s here. 6 s allows
        # a late sweep on a loaded machine, and the 2 s timeout lets the
        # busy connection's pings (every ~0.2 s) run late under ASan.
        deadline = t0 + 6.0
        while time.monotonic() < deadline and len(closed) < 2:
            for name, c in (("silent", silent), ("helloed", helloed)):
                if name in closed:
                    continue
                try:
                    c.frame(0.05)
                except bw.Closed:
                    closed[name] = time.monotonic() - t0
                except socket.timeout:
                    pass
            ping_ok(node, busy, what="busy connection")     # keeps it alive
            time.sleep(0.1)
        check(len(closed) == 2, "idle connections not closed within 6 s: "
              "closed %r", closed)
        print("closed after: %r" % closed)
        check(min(closed.values()) >= 1.9, "closed too early: %r", closed)
        ping_ok(node, busy, what="busy connection after 6 s")
        check(bw.stats(busy)["connections"] == 1, "connections != 1")
        busy.close()
    finally:
        finish(node)


# ---- TTL and eviction ----

@case
def ttl(args):
    node = bw.Node(args.node)
    try:
        c = node.conn()
        expect_status(c.call("SET", 1, b"t1", b"v", 1, 0), "OK", "SET ttl 1")
        expect_status(c.call("SET", 2, b"t2", b"v", 1, 0), "OK", "SET ttl 1")
        expect_status(c.call("SET", 3, b"keep", b"v", 0, 0), "OK", "SET")
        expect_status(c.call("SET", 4, b"t3", b"v", 100, 0), "OK", "SET")
        rep = c.call("GET", 5, b"t1")
        expect_status(rep, "OK", "GET right after SET ttl 1")
        time.sleep(2.2)
        expect_status(c.call("GET", 6, b"t1"), "NOTFOUND",
                      "GET 2.2 s after SET ttl 1")
        expect_status(c.call("GET", 7, b"keep"), "OK", "GET ttl 0")
        expect_status(c.call("GET", 8, b"t3"), "OK", "GET ttl 100")
        # t2 was never read again: the background reclaim frees it.
        wait_for(lambda: bw.stats(c)["keys"] == 2, 5,
                 "the reaper to free the unread expired key")
        check(bw.stats(c)["expirations"] == 2, "expirations != 2")
        # TOUCH and GAT move the expiry; an absolute time in the past
        # expires at once.
        expect_status(c.call("TOUCH", 9, b"keep", 1), "OK", "TOUCH")
        expect_status(c.call("GAT", 10, b"t3", 1), "OK", "GAT")
        expect_status(c.call("SET", 11, b"past", b"v", 2592001, 0), "OK",
                      "SET absolute past")
        expect_status(c.call("GET", 12, b"past"), "NOTFOUND",
                      "GET of an absolute past expiry")
        time.sleep(2.2)
        for rid, k in ((13, b"keep"), (14, b"t3")):
            expect_status(c.call("GET", rid, k), "NOTFOUND",
                          "GET %s after TOUCH/GAT 1" % k.decode())
        c.close()
    finally:
        finish(node)


@case
def eviction(args):
    node = bw.Node(args.node, "--memory-mb", 8)
    try:
        c = node.conn()
        val = b"e" * 1024
        n = 20 * 1024                   # 20 MiB of 1 KiB values
        batch = 256
        for start in range(0, n, batch):
            c.send(b"".join(bw.req("SET", i + 1, b"key-%06d" % i, val, 0, 0)
                            for i in range(start, min(n, start + batch))))
            for i in range(start, min(n, start + batch)):
                rep = c.reply()
                check(rep[:2] == [0, i + 1], "SET %d: %r", i, rep)
        st = bw.stats(c)
        print("keys %d evictions %d memory_used %d limit %d" %
              (st["keys"], st["evictions"], st["memory_used"],
               st["memory_limit"]))
        check(st["evictions"] > 0, "no evictions")
        check(st["memory_limit"] == 8 * MIB, "memory_limit %d",
              st["memory_limit"])
        check(st["memory_used"] <= st["memory_limit"],
              "memory_used %d above the limit %d", st["memory_used"],
              st["memory_limit"])
        check(st["keys"] + st["evictions"] == n, "keys %d + evictions %d "
              "!= %d", st["keys"], st["evictions"], n)
        check(st["keys"] >= 1000, "only %d keys kept in 8 MiB", st["keys"])
        for i in range(n - 100, n):
            rep = c.call("GET", 9000000 + i, b"key-%06d" % i)
            expect_status(rep, "OK", "GET of recent key %d" % i)
            check(rep[2] == val, "key %d: wrong value", i)
        expect_status(c.call("GET", 1, b"key-000000"), "NOTFOUND",
                      "GET of the first key")
        c.close()
    finally:
        finish(node)


# ---- every op over the wire ----

@case
def ops(args):
    node = bw.Node(args.node)
    try:
        raw = bw.Conn(node.port, do_hello=False)
        expect_status(raw.call("PING", 1), "OK", "PING before HELLO")
        expect_status(raw.call("GET", 2, b"k"), "BADREQ", "GET before HELLO")
        raw.send(bw.req("HELLO", 3, 2, 0, 1, 0))
        expect_status(raw.reply(), "BADREQ", "HELLO version 2")
        raw.close()

        c = node.conn()
        rep = c.call("SET", 10, b"k", b"v1", 0, 5)
        expect_status(rep, "OK", "SET")
        cas1 = rep[2]
        rep = c.call("GET", 11, b"k")
        check(rep == [0, 11, b"v1", 5, cas1], "GET: %r", rep)
        expect_status(c.call("ADD", 12, b"k", b"x", 0, 0), "NOTSTORED", "ADD")
        expect_status(c.call("REPLACE", 13, b"nope", b"x", 0, 0),
                      "NOTSTORED", "REPLACE absent")
        expect_status(c.call("CAS", 14, b"k", b"x", 0, 0, cas1 + 1), "EXISTS",
                      "CAS mismatch")
        expect_status(c.call("CAS", 15, b"nope", b"x", 0, 0, 1), "NOTFOUND",
                      "CAS absent")
        expect_status(c.call("CAS", 16, b"k", b"v2", 0, 6, cas1), "OK",
                      "CAS match")
        expect_status(c.call("APPEND", 17, b"k", b"-a"), "OK", "APPEND")
        expect_status(c.call("PREPEND", 18, b"k", b"p-"), "OK", "PREPEND")
        rep = c.call("GET", 19, b"k")
        check(rep[2] == b"p-v2-a" and rep[3] == 6, "after APPEND: %r", rep)
        expect_status(c.call("SET", 20, b"n", b"10", 0, 0), "OK", "SET n")
        rep = c.call("INCR", 21, b"n", 5)
        check(rep[:3] == [0, 21, 15], "INCR: %r", rep)
        rep = c.call("DECR", 22, b"n", 100)
        check(rep[:3] == [0, 22, 0], "DECR: %r", rep)
        expect_status(c.call("INCR", 23, b"k", 1), "NONUMERIC", "INCR text")
        rep = c.call("MGET", 24, [b"k", b"missing", b"n"])
        check(rep[0] == 0 and len(rep[2]) == 3 and rep[2][1] is None,
              "MGET: %r", rep)
        expect_status(c.call("DEL", 25, b"k"), "OK", "DEL")
        expect_status(c.call("DEL", 26, b"k"), "NOTFOUND", "DEL again")
        expect_status(c.call("GET", 27, b""), "INVAL", "empty key")
        expect_status(c.call("GET", 28, b"x" * 251), "INVAL", "251-byte key")
        expect_status(c.call(99, 29), "UNKNOWNOP", "op 99")
        expect_status(c.call("FLUSH", 30), "DENIED", "FLUSH as a client")
        admin = node.conn(role=bw.ROLE_ADMIN)
        expect_status(admin.call("FLUSH", 31), "OK", "FLUSH as admin")
        expect_status(c.call("GET", 32, b"n"), "NOTFOUND", "GET after FLUSH")
        wait_for(lambda: bw.stats(c)["connections"] == 2, 5,
                 "the closed connections to go")
        st = bw.stats(c)
        for name in ("keys", "bytes", "memory_limit", "hits", "misses",
                     "sets", "deletes", "evictions", "expirations",
                     "connections", "requests_per_sec", "ops"):
            check(name in st, "STATS lacks %s: %r", name, sorted(st))
        check(st["keys"] == 0 and st["connections"] == 2, "STATS: %r", st)
        c.close()
        admin.close()
    finally:
        finish(node)


# ---- command line and config file ----

def run_node(args, argv, timeout=10):
    import subprocess
    p = subprocess.run([args.node] + argv, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@case
def help(args):                         # noqa: A001 (the case's name)
    rc, out, err = run_node(args, ["--help"])
    check(rc == 0, "--help exit %d", rc)
    check(out.startswith("usage: brim-node"), "--help stdout: %r", out[:200])
    for opt in ("--listen", "--memory-mb", "--max-value-bytes",
                "--max-conns", "--idle-timeout", "--standalone", "--config"):
        check(opt in out, "--help does not mention %s", opt)


@case
def no_standalone(args):
    rc, out, err = run_node(args, ["--listen", "127.0.0.1:%d" %
                                   bw.free_port()])
    check(rc == 2, "without --standalone: exit %d (stderr %r)", rc, err)
    check("--standalone" in err, "no mention of --standalone: %r", err)
    rc, out, err = run_node(args, ["--standalone", "--bogus"])
    check(rc == 2, "unknown option: exit %d", rc)
    # getopt's refusals are said as brim-node's, with the option's rule.
    for argv, want in (
            (["--standalone", "--bogus"], 'unknown option "--bogus"'),
            (["--standalone", "--prefault=yes"],
             '--prefault takes no value (given "--prefault=yes")'),
            (["--standalone", "--memory-mb"], "--memory-mb needs a value (M)"),
            (["--standalone", "-xy"],
             'unknown option "-x" (options are long: --NAME)')):
        rc, out, err = run_node(args, argv)
        check(rc == 2, "%r: exit %d", argv, rc)
        check(err.startswith("brim-node: " + want), "%r: stderr %r", argv,
              err)
    rc, out, err = run_node(args, ["--standalone", "--memory-mb", "0"])
    check(rc == 2 and "memory-mb" in err, "--memory-mb 0: %d %r", rc, err)


@case
def config_file(args):
    port = bw.free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write("# brim-node test config\n\nlisten 127.0.0.1:%d\n"
                "memory-mb 16   # trailing comment\nmax-conns = 50\n" % port)
        path = f.name
    node = None
    try:
        node = bw.Node(args.node, "--config", path)
        # The command line wins over the file: it gave another --listen
        # (Node's own port); the file's port is not served.
        c = node.conn()
        st = bw.stats(c)
        check(st["memory_limit"] == 16 * MIB, "memory_limit %d from the "
              "file", st["memory_limit"])
        c.close()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            raise AssertionError("the file's listen address is served "
                                 "although --listen was given")
        except OSError:
            pass
        finish(node)
        node = None
        # Without --listen the file's address is used.
        import subprocess
        proc = subprocess.Popen([args.node, "--standalone", "--config", path],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            def up():
                try:
                    return bw.Conn(port)
                except OSError:
                    if proc.poll() is not None:
                        raise AssertionError("node exited %d: %s" % (
                            proc.returncode, proc.stderr.read()))
                    return None
            c = wait_for(up, 10, "the node on the file's port")
            check(bw.stats(c)["memory_limit"] == 16 * MIB, "memory_limit")
            c.close()
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            err = proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
            for mark in bw.SANITIZER_MARKS:
                check(mark not in err, "sanitizer report:\n%s", err)
            check(proc.returncode == 0, "exit %r: %s", proc.returncode, err)
    finally:
        if node is not None:
            finish(node)
        os.unlink(path)


@case
def config_bad_line(args):
    cases = [
        ("listen 127.0.0.1:1\nbogus-option 5\n", 2, "bogus-option"),
        ("# ok\nmemory-mb abc\n", 2, "memory-mb"),
        ("memory-mb\n", 1, "memory-mb"),
        ("listen 127.0.0.1:1\n\n\nevict fifo\n", 4, "evict"),
    ]
    for text, line, word in cases:
        with tempfile.NamedTemporaryFile("w", suffix=".conf",
                                         delete=False) as f:
            f.write(text)
            path = f.name
        try:
            rc, out, err = run_node(args, ["--standalone", "--config", path])
            check(rc == 2, "%r: exit %d, want 2 (stderr %r)", text, rc, err)
            check("%s:%d" % (path, line) in err,
                  "%r: stderr does not name %s:%d: %r", text, path, line, err)
            check(word in err, "%r: stderr does not name %s: %r", text,
                  word, err)
        finally:
            os.unlink(path)
    rc, out, err = run_node(args, ["--standalone", "--config",
                                   "/nonexistent/brim.conf"])
    check(rc == 2 and "/nonexistent/brim.conf" in err,
          "missing config file: %d %r", rc, err)


@case
def bad_settings(args):
    """Settings a node cannot run with are refused at start, naming them
    (review findings: a too-small memory limit, names outside the node
    name set, bare IPv6, a directory as config, a flag given a value)."""
    port = bw.free_port()
    listen = ["--listen", "127.0.0.1:%d" % port]
    cases = [
        (["--standalone", "--memory-mb", "1"] + listen, "memory-mb"),
        (["--standalone", "--memory-mb", "8", "--partitions", "1048576"]
         + listen, "partitions"),
        (["--standalone", "--memory-mb", "2", "--partitions", "256",
          "--max-value-bytes", "4000000"] + listen, "max-value-bytes"),
        (["--standalone", "--name", "a b"] + listen, "name"),
        (["--standalone", "--name", "x\ny"] + listen, "name"),
        (["--standalone", "--listen", "::1:%d" % port], "[IPv6]"),
        (["--standalone", "--listen", "nosuch.invalid:%d" % port],
         "not resolved"),
        (["--standalone", "--config", "/tmp"] + listen, "/tmp"),
        # The value as typed and the rule, never "not a whole number".
        (["--standalone", "--partitions", "7"] + listen,
         "--partitions: 7 is not a power of two from 256 to 1048576"),
        (["--standalone", "--partitions", "300"] + listen,
         "--partitions: 300 is not a power of two from 256 to 1048576"),
        (["--name", "a", "--coordinator", "127.0.0.1:1", "--weight",
          "0.0001"] + listen, "--weight: 0.0001 is below"),
        (["--standalone", "--secret-file", "/nonexistent/secret"] + listen,
         "--secret-file: secret file /nonexistent/secret"),
        # A prefault past the machine's memory would wake the OOM killer:
        # refused before any of it is touched.
        (["--standalone", "--memory-mb", "1048576", "--prefault"] + listen,
         "--prefault: --memory-mb 1048576 needs 1048576 MiB"),
        # Two ports of one node on one address: said, not a bare bind
        # error (a fresh tester's find).
        (["--standalone", "--memcached-listen", "127.0.0.1:%d" % port]
         + listen, "--listen and --memcached-listen are both 127.0.0.1:%d"
         % port),
    ]
    for argv, word in cases:
        rc, out, err = run_node(args, argv)
        # A setting that cannot be is a usage error (exit 2), said before
        # anything is bound.
        check(rc == 2, "%r: exit %d, want 2 (stderr %r)", argv, rc, err)
        check(word in err, "%r: stderr does not name %r: %r", argv, word, err)
    for value, want in (("false", "--standalone"), ("maybe", "maybe")):
        with tempfile.NamedTemporaryFile("w", suffix=".conf",
                                         delete=False) as f:
            f.write("standalone %s\nlisten 127.0.0.1:%d\n" % (value, port))
            path = f.name
        try:
            rc, out, err = run_node(args, ["--config", path])
            check(rc == 2 and want in err, "standalone %s: %d %r", value, rc,
                  err)
        finally:
            os.unlink(path)


@case
def stats_sections(args):
    node = bw.Node(args.node)
    try:
        c = node.conn()
        full = bw.stats(c)
        for key in ("keys", "connections", "requests", "ops"):
            check(key in full, "full STATS lacks %r: %r", key, full)
        want = {"node": "requests", "store": "evictions",
                "conns": "read_pauses", "ops": "ops"}
        for sec, key in want.items():
            rep = c.call("STATS", 50, sec.encode())
            expect_status(rep, "OK", "STATS %s" % sec)
            got = rep[2]
            check(key in got, "STATS %s lacks %r: %r", sec, key, got)
            check(len(got) < len(full), "STATS %s is not a subset", sec)
        rep = c.call("STATS", 51, b"nosuchsection")
        expect_status(rep, "INVAL", "STATS nosuchsection")
    finally:
        finish(node)


# ---- driver ----

def finish(node):
    """Stop NODE by PID and insist on a clean exit without reports."""
    node.stop()
    try:
        node.check_clean()
    finally:
        node.cleanup()


def codec_check(args):
    """The two codecs must agree where both exist."""
    sample = [13, 1 << 40, 0, b"k", b"\x00" * 300, "text", -5, None,
              {"a": [1, 2]}, 1.5]
    check(bw.strict_unpack(bw.small_pack(sample)) == sample,
          "small codec round trip")
    check(bw.unpack(bw.pack(sample)) == sample, "codec round trip")
    check(bw.strict_unpack(bw.pack(sample)) == sample, "codecs disagree")
    print("codec: %s" % bw.codec_name())


def main():
    return bt.main(CASES, description=__doc__.split("\n")[0],
                   options=[("--node", dict(help="the brim-node binary"))],
                   need=["node"], before=codec_check)


if __name__ == "__main__":
    sys.exit(main())
