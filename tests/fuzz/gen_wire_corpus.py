#!/usr/bin/env python3
"""Write the seed corpus of fuzz_wire: tests/fuzz/corpus/wire/.

Each file is a byte stream as a socket delivers it: one or more frames
(4-byte big-endian length, then a msgpack body), per proto/PROTOCOL.md.
Valid requests of every op, replies of every shape, and the malformed
inputs of cases I10 to I12 (shared/cases/inputs.md). The msgpack is packed
here by hand, independently of proto/wire.c, with no third-party module;
the opcodes and statuses are tests/support/brimtest.py's, read from
proto/ops.h and <brim/status.h>.

    python3 tests/fuzz/gen_wire_corpus.py [OUTDIR]
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
from brimtest import OP, ST  # noqa: E402


def pack(o):
    """msgpack of O: int, bytes (bin), str, list, dict, None, bool, float."""
    if o is None:
        return b"\xc0"
    if o is True:
        return b"\xc3"
    if o is False:
        return b"\xc2"
    if isinstance(o, int):
        if 0 <= o < 0x80:
            return bytes([o])
        if -32 <= o < 0:
            return struct.pack("b", o)
        if o >= 0:
            for fmt, tag in ((">B", 0xcc), (">H", 0xcd), (">I", 0xce),
                             (">Q", 0xcf)):
                try:
                    return bytes([tag]) + struct.pack(fmt, o)
                except struct.error:
                    pass
        for fmt, tag in ((">b", 0xd0), (">h", 0xd1), (">i", 0xd2),
                         (">q", 0xd3)):
            try:
                return bytes([tag]) + struct.pack(fmt, o)
            except struct.error:
                pass
        raise ValueError(o)
    if isinstance(o, float):
        return b"\xcb" + struct.pack(">d", o)
    if isinstance(o, str):
        b = o.encode()
        if len(b) < 32:
            return bytes([0xa0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xda" + struct.pack(">H", len(b)) + b
    if isinstance(o, bytes):
        if len(o) < 256:
            return b"\xc4" + bytes([len(o)]) + o
        return b"\xc5" + struct.pack(">H", len(o)) + o
    if isinstance(o, list):
        head = (bytes([0x90 | len(o)]) if len(o) < 16
                else b"\xdc" + struct.pack(">H", len(o)))
        return head + b"".join(pack(x) for x in o)
    if isinstance(o, dict):
        head = (bytes([0x80 | len(o)]) if len(o) < 16
                else b"\xde" + struct.pack(">H", len(o)))
        return head + b"".join(pack(k) + pack(v) for k, v in o.items())
    raise TypeError(o)


def frame(body):
    return struct.pack(">I", len(body)) + body


# Opcodes and statuses of proto/ops.h and <brim/status.h>.
(HELLO, PING, STATS, GET, MGET, GAT, SET, ADD, REPLACE, CAS, APPEND, PREPEND,
 DEL, TOUCH, INCR, DECR, FLUSH, JOIN) = (OP[n] for n in (
    "HELLO", "PING", "STATS", "GET", "MGET", "GAT", "SET", "ADD", "REPLACE",
    "CAS", "APPEND", "PREPEND", "DEL", "TOUCH", "INCR", "DECR", "FLUSH",
    "JOIN"))
NOTFOUND, BADREQ, TOOBIG, MOVED, RETRY = (ST[n] for n in (
    "NOTFOUND", "BADREQ", "TOOBIG", "MOVED", "RETRY"))

K = b"user:42"
V = b"hello world"


def req(op, rid, *args, epoch=3):
    return pack([op, rid, epoch] + list(args))


def corpus():
    c = {}
    # Valid requests of every op (the fuzz limits: key 16, value 64).
    c["req-hello"] = frame(req(HELLO, 1, 1, 0, 1, 0))
    c["req-hello-node"] = frame(req(HELLO, 1, 1, 0xfeedface, 2, 77, "n1"))
    c["req-ping"] = frame(req(PING, 2))
    c["req-stats"] = frame(req(STATS, 3))
    c["req-stats-section"] = frame(req(STATS, 3, "ops"))
    c["req-get"] = frame(req(GET, 4, K))
    c["req-get-str-key"] = frame(req(GET, 4, "user:42"))
    c["req-mget"] = frame(req(MGET, 5, [b"a", b"b", K]))
    c["req-gat"] = frame(req(GAT, 6, K, 60))
    c["req-set"] = frame(req(SET, 7, K, V, 0, 0xdeadbeef))
    c["req-set-abs-ttl"] = frame(req(SET, 7, K, V, 2592001, 0))
    c["req-add"] = frame(req(ADD, 8, K, V, 10, 0))
    c["req-replace"] = frame(req(REPLACE, 9, K, b"", 0, 1))
    c["req-cas"] = frame(req(CAS, 10, K, V, 0, 0, 0x0123456789abcdef))
    c["req-append"] = frame(req(APPEND, 11, K, b"!"))
    c["req-prepend"] = frame(req(PREPEND, 12, K, b"<"))
    c["req-del"] = frame(req(DEL, 13, K))
    c["req-touch"] = frame(req(TOUCH, 14, K, 30))
    c["req-incr"] = frame(req(INCR, 15, K, 1))
    c["req-decr"] = frame(req(DECR, 16, K, 2**64 - 1))
    c["req-flush"] = frame(req(FLUSH, 17))
    c["req-flush-delay"] = frame(req(FLUSH, 17, 5))
    # I11: three requests in one read.
    c["i11-three-frames"] = (frame(req(GET, 1, K)) + frame(req(SET, 2, K, V,
                             0, 0)) + frame(req(DEL, 3, K)))
    c["i11-half-frame"] = frame(req(SET, 1, K, V, 0, 0))[:9]
    c["i11-header-only"] = frame(req(GET, 1, K))[:4]
    # Replies of every shape.
    c["rep-ok"] = frame(pack([0, 1]))
    c["rep-value"] = frame(pack([0, 1, V, 7, 99]))
    c["rep-cas"] = frame(pack([0, 1, 12345]))
    c["rep-number"] = frame(pack([0, 1, 42, 43]))
    c["rep-entries"] = frame(pack([0, 1, [[V, 0, 1], None, MOVED]]))
    c["rep-stats"] = frame(pack([0, 1, {"keys": 3, "version": "0.1.0",
                                        "rps": 1.5, "ops": {"get": 1}}]))
    c["rep-hello"] = frame(pack([0, 1, 1, 5, 2, 9, 4, "n1", 16, 64, 2048, 8]))
    c["rep-notfound"] = frame(pack([NOTFOUND, 4, ""]))
    c["rep-moved"] = frame(pack([MOVED, 4, "moved", 12, "127.0.0.1:7001"]))
    c["rep-retry"] = frame(pack([RETRY, 4, "in transition", 12]))
    # Limits and wrong types.
    c["bad-key-too-long"] = frame(req(GET, 20, b"k" * 17))
    c["bad-key-empty"] = frame(req(GET, 20, b""))
    c["bad-value-too-big"] = frame(req(SET, 21, K, b"v" * 65, 0, 0))
    c["bad-mget-too-many"] = frame(req(MGET, 22, [b"k"] * 9))
    c["bad-unknown-op"] = frame(req(99, 23))
    c["bad-reserved-op"] = frame(req(JOIN, 24, "n1"))
    c["bad-role"] = frame(req(HELLO, 25, 1, 0, 9, 0))
    c["bad-ttl-type"] = frame(req(SET, 26, K, V, "60", 0))
    c["bad-negative-flags"] = frame(req(SET, 27, K, V, 0, -1))
    c["bad-args"] = frame(req(PING, 28, 1))
    # I10: huge declared lengths.
    c["i10-huge-header"] = b"\xff\xff\xff\xff"
    c["i10-huge-array"] = frame(b"\xdd\xff\xff\xff\xff")
    c["i10-huge-bin"] = frame(b"\xc6\xff\xff\xff\xfe")
    c["i10-huge-map"] = frame(b"\xdf\xff\xff\xff\xff")
    # I12: malformed msgpack.
    c["i12-c1"] = frame(b"\xc1")
    c["i12-map-c1"] = frame(b"\x81\xc1\x00")
    c["i12-bare-int"] = frame(pack(42))
    c["i12-trailing"] = frame(req(PING, 1) + b"\x00")
    c["i12-too-deep"] = frame(b"\x91" * 9 + b"\xc0")
    c["i12-empty-body"] = frame(b"")
    return c


def main():
    out = (sys.argv[1] if len(sys.argv) > 1 else
           os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "corpus", "wire"))
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(corpus()), out))


if __name__ == "__main__":
    main()
