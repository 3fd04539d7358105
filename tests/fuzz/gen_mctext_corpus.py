#!/usr/bin/env python3
"""Write the seed corpus of fuzz_mctext: tests/fuzz/corpus/mctext/.

Each file is a byte stream as a memcached client sends it: every text and
meta command with and without noreply or q, pipelines, and the odd inputs
whose answers were checked against memcached 1.6.18 (docs/memcached.md):
bad numbers, bad data chunks, long keys and lines, base64 keys, opaques,
NUL bytes, a web browser. Files stay small (the longest lines are about
3 KB, to pass the 2048-byte line limit).

    python3 tests/fuzz/gen_mctext_corpus.py [OUTDIR]
"""
import os
import sys

K250 = b"a" * 250
K251 = b"a" * 251


def corpus():
    c = {}
    # text retrieval
    c["get"] = b"get foo\r\n"
    c["get-multi"] = b"get a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n"
    c["gets"] = b"gets foo bar\r\n"
    c["gat"] = b"gat 100 foo bar\r\n"
    c["gats"] = b"gats -1 foo\r\n"
    c["gat-no-key"] = b"gat 10\r\n"
    c["bget"] = b"bget foo\r\n"
    c["get-spaces-lf"] = b"  get  f   k  \n"
    c["get-long-key"] = b"get a " + K251 + b" b\r\n"
    c["get-long-line"] = b"get " + b"k " * 1500 + b"\r\n"
    c["get-101-spaces"] = b" " * 101 + b"get " + b"k " * 1000
    # text storage
    for w in (b"set", b"add", b"replace", b"append", b"prepend"):
        c[w.decode()] = w + b" key 7 300 5\r\nhello\r\n"
        c[w.decode() + "-noreply"] = w + b" key 0 0 2 noreply\r\nhi\r\n"
    c["cas"] = b"cas k 1 2 3 99\r\nabc\r\n"
    c["cas-noreply"] = b"cas k 0 0 1 18446744073709551615 noreply\r\nx\r\n"
    c["set-binary-data"] = b"set k 0 0 6\r\na\r\nb\r\n\r\n"
    c["set-empty"] = b"set k 0 0 0\r\n\r\n"
    c["set-garbage-token"] = b"set k 0 0 1 garbage\r\nx\r\n"
    c["set-bad-chunk"] = b"set f 0 0 3\r\nabcd\r\n"
    c["set-bad-chunk-lf"] = b"set f 0 0 3\r\nabc\n\r\n"
    c["set-too-large"] = b"set big 0 0 2000000\r\nxxxxxxxx"
    c["set-too-large-noreply"] = b"set big 0 0 2000000 noreply\r\nxx"
    c["set-bytes-max"] = b"set k 0 0 2147483645\r\n"
    c["set-bytes-format"] = b"set k 0 0 2147483646\r\n"
    c["set-key-251"] = b"set " + K251 + b" 0 0 1\r\nx\r\n"
    c["set-key-250"] = b"set " + K250 + b" 0 0 1\r\nx\r\n"
    c["set-key-ctl"] = b"set a\tb\x01\xff\rc 0 0 1\r\nx\r\n"
    c["set-count"] = b"set f 0 0 1 2 3\r\nx\r\n"
    # numbers
    c["num-flags-wrap"] = b"set k 4294967296 0 1\r\nx\r\n"
    c["num-flags-neg"] = b"set k -1 0 1\r\nx\r\n"
    c["num-flags-negwrap"] = b"set k -18446744073709551615 0 1\r\nx\r\n"
    c["num-flags-over"] = b"set k 18446744073709551616 0 1\r\nx\r\n"
    c["num-flags-plus"] = b"set k +5 0 1\r\nx\r\n"
    c["num-flags-junk"] = b"set k 5x 0 1\r\nx\r\n"
    c["num-tab"] = b"set k \t7 0 1\t\r\nx\r\n"
    c["num-exptime-wrap"] = b"set k 0 4294967295 1\r\nx\r\n"
    c["num-exptime-neg"] = b"set k 0 -1 1\r\nx\r\n"
    c["num-bytes-wrap"] = b"set k 0 0 4294967297\r\nx\r\n"
    c["num-bytes-neg"] = b"set k 0 0 -1\r\nx\r\n"
    # other text commands
    c["delete"] = b"delete k\r\ndelete k 0\r\ndelete k noreply\r\n"
    c["delete-0-noreply"] = b"delete k 0 noreply\r\n"
    c["delete-usage"] = b"delete k 1\r\ndelete k x noreply\r\n"
    c["incr"] = b"incr n 5\r\ndecr n 7 noreply\r\n"
    c["incr-max"] = b"incr n 18446744073709551615\r\n"
    c["incr-bad"] = b"incr n -1\r\nincr n 18446744073709551616\r\nincr n abc\r\n"
    c["touch"] = b"touch k 10\r\ntouch k -5 noreply\r\ntouch k x\r\n"
    c["flush-all"] = (b"flush_all\r\nflush_all 10\r\nflush_all noreply\r\n"
                      b"flush_all 0 noreply\r\nflush_all x\r\n")
    c["version"] = b"version\r\nversion x y\r\n"
    c["verbosity"] = b"verbosity 1\r\nverbosity 1 noreply\r\nverbosity noreply\r\n"
    c["stats"] = b"stats\r\nstats items\r\nstats detail on\r\n"
    c["quit"] = b"quit\r\nversion\r\n"
    c["shutdown"] = b"shutdown\r\n"
    # errors
    c["unknown"] = b"bogus\r\nGET f\r\nx\r\n\r\n\n\r\r\n"
    c["http"] = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    c["nul"] = b"get k\x00junk\r\n\x00version\r\n"
    c["line-2049"] = b"x" * 2049
    c["line-2048-lf"] = b"x" * 2048 + b"\n"
    # meta
    c["mn"] = b"mn\r\n"
    c["mg"] = b"mg foo v\r\n"
    c["mg-all-flags"] = b"mg k c f h k l O123 P L q s t u v N30 R5 T-1 I\r\n"
    c["mg-quiet"] = b"mg a q v\r\nmg b q v\r\nmn\r\n"
    c["mg-errors"] = (b"mg k zz\r\nmg k v v\r\nmg k Tx\r\nmg k Tx Dx\r\n"
                      b"mg k Fx\r\nmg k E5\r\nmg k \x80\r\n")
    c["mg-many"] = b"mg k a b c d e f g h i j k l m n o p q r\r\n"
    c["mg-opaque-31"] = b"mg k O" + b"1" * 31 + b"\r\n"
    c["mg-opaque-32"] = b"mg k O" + b"1" * 32 + b"\r\n"
    c["mg-b64"] = b"mg Zm9v b v k\r\nmg Zm9v! b k\r\nmg Zg==Zm9v b k\r\n"
    c["mg-b64-bad"] = b"mg Zm9 b\r\nmg Z=== b\r\n"
    c["ms"] = b"ms k 2\r\nhi\r\n"
    c["ms-flags"] = b"ms k 3 F4294967295 T60 I k c Oab q\r\nabc\r\n"
    c["ms-modes"] = (b"ms k 1 ME\r\nx\r\nms k 1 MA\r\nx\r\nms k 1 MP\r\nx\r\n"
                     b"ms k 1 MR\r\nx\r\nms k 1 MS C5\r\nx\r\n")
    c["ms-bad-mode"] = b"ms k 2 MZ\r\nhi\r\nms k 2 MEE\r\nhi\r\n"
    c["ms-before-len"] = b"ms k x\r\nhi\r\nms\r\nms k\r\n"
    c["ms-too-large"] = b"ms big 2000000 q T0\r\nxx"
    c["ms-bad-chunk"] = b"ms k 2 q\r\nhiX\r\n"
    c["ms-b64"] = b"ms AAEC 1 b k c\r\nx\r\n"
    c["md"] = b"md k\r\nmd k q C5 I T30 k Oz\r\nmd k zz\r\n"
    c["ma"] = (b"ma k\r\nma k D18446744073709551615 MD N0 J5 v t c k O1 q\r\n"
               b"ma k M-\r\nma k Mx\r\nma k Dx\r\n")
    c["me"] = b"me k\r\nme Yw== b\r\nme Yw== x b\r\nme\r\nme c b\r\n"
    c["pipeline"] = (b"get a b\r\nset k 1 2 3\r\nabc\r\nmg k v\r\n"
                     b"delete k noreply\r\nbogus\r\nms k 2 T5\r\nhi\r\n"
                     b"incr n 1\r\nmn\r\nget")
    return c


def main():
    out = (sys.argv[1] if len(sys.argv) > 1 else
           os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "corpus", "mctext"))
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(corpus()), out))


if __name__ == "__main__":
    main()
