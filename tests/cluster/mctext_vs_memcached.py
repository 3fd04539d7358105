#!/usr/bin/env python3
"""Set proto/mctext.c's answers beside a real memcached's.

Each case is a byte stream (one to three commands, odd ones included, then
"mn\\r\\n"). It is sent on a fresh connection to a memcached started here
on a free loopback port, and given to mctext_model (tests/cluster/
mctext_model.c), which prints what the parser makes of it. Both sides are
reduced to the same classes: an error line exactly ("ERROR",
"CLIENT_ERROR ...", "SERVER_ERROR ..."), "MN", "CLOSED", and "." for any
other answer (runs of "." count as one, since a hit and a miss differ in
lines but not in what the parser decided). The model's "?" (a meta command
with q, whose reply depends on the cache) matches "." or nothing, and its
"WAIT" matches memcached staying silent. Errors of the cache rather than
the parser ("cannot increment or decrement non-numeric value") count as
".". Values stay far below memcached's 1 MB item limit, whose exact edge
depends on its slab overhead.

    mctext_vs_memcached.py --model build/bin/mctext_model
        [--memcached /usr/bin/memcached] [--cases 2000] [--seed 1]
        vs_memcached

(--list prints the one case name, for tests/proto.cmake.)

Exits 0 when every case agrees, 1 on a mismatch (printed), 77 (skipped)
when there is no memcached binary. memcached is stopped by PID.
"""
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
import brimtest as bt  # noqa: E402
import ports  # noqa: E402

# Cases checked by hand against memcached 1.6.18 while writing the parser.
FIXED = [
    b"set k 0 0 4294967297\r\nx\r\n",
    b"set f 4294967296 0 1\r\nx\r\n",
    b"set f -1 0 1\r\nx\r\n",
    b"set f -18446744073709551615 0 1\r\nx\r\n",
    b"set f 18446744073709551616 0 1\r\nx\r\n",
    b"set f +5 0 1\r\nx\r\n",
    b"set f 5x 0 1\r\nx\r\n",
    b"set f 0 -1 1\r\nx\r\n",
    b"set f 0 0 -1\r\nx\r\n",
    b"set f 0 0 2147483646\r\n",
    b"set f 0 0 2147483645\r\nxx\r\n",
    b"set f 0 0 abc noreply\r\nx\r\n",
    b"set f 0 0 1 garbage\r\nx\r\n",
    b"set f 0 0 1 noreply\r\nx\r\n",
    b"set f 0 0 3\r\nabcd\r\n",
    b"set f 0 0 3\r\nab\r\n\r\n",
    b"set f 0 0 3\nabc\n",
    b"set f 0 0\r\n",
    b"set f 0 0 1 2 3\r\nx\r\n",
    b"set k 0 0 1 noreply\r\nxy\r\n",
    b"set " + b"a" * 251 + b" 0 0 1\r\nx\r\n",
    b"set " + b"a" * 250 + b" 0 0 1\r\nx\r\n",
    b"set " + b"a" * 251 + b" 0 0 1 noreply\r\nx\r\n",
    b"set big 0 0 2000000\r\n" + b"x" * 2000000 + b"\r\n",
    b"set big 0 0 2000000 noreply\r\n" + b"x" * 2000000 + b"\r\n",
    b"cas k 0 0 1\r\nx\r\n", b"cas k 0 0 1 abc\r\nx\r\n",
    b"cas k 0 0 1 -1\r\nx\r\n", b"cas k 0 0 1 5 x\r\nx\r\n",
    b"get a " + b"a" * 251 + b" b\r\n", b"get\r\n", b"get \r\n",
    b"gat\r\n", b"gat 10\r\n", b"gat x k\r\n", b"gats 0 f k\r\n",
    b"  get  f   k  \r\n", b"get\tf\r\n", b"GET f\r\n", b"bget f\r\n",
    b"get " + b" ".join(b"k%d" % i for i in range(40)) + b"\r\n",
    b"delete\r\n", b"delete f\r\n", b"delete k 0\r\n", b"delete k 1\r\n",
    b"delete k noreply\r\n", b"delete k 0 noreply\r\n",
    b"delete k noreply 0\r\n", b"delete k 0 0\r\n",
    b"delete k 0 noreply x\r\n", b"delete k x noreply\r\n",
    b"incr n -1\r\n", b"incr n 18446744073709551616\r\n", b"incr n abc\r\n",
    b"incr n\r\n", b"incr n 1 2 3\r\n", b"incr n 1x noreply\r\n",
    b"touch k x\r\n", b"touch k\r\n", b"touch k x noreply\r\n",
    b"flush_all x\r\n", b"flush_all noreply\r\n", b"flush_all 0 x\r\n",
    b"flush_all x noreply\r\n", b"flush_all 1 2 3\r\n",
    b"flush_all noreply x\r\n",
    b"version x y\r\n", b"verbosity\r\n", b"verbosity x\r\n",
    b"verbosity noreply\r\n", b"verbosity 1 2\r\n", b"verbosity 1 2 3\r\n",
    b"verbosity -1\r\n", b"quit\r\nversion\r\n", b"mn x y\r\n", b"mx\r\n",
    b"m\r\n", b"x\r\n", b"\r\n", b"\n", b"\r\r\n", b" \r\n",
    b"GET / HTTP/1.1\r\n", b"foo HTTP/1.0\r\nversion\r\n",
    b"gxx HTTP/1.0\r\n", b"shutdown\r\n", b"shutdown graceful\r\n",
    # Long lines, sent in two pieces: memcached closes a connection that
    # has more than 2048 bytes buffered without a '\n' (except a get
    # line), and serves a longer line that came in one read; mctext always
    # closes, which is memcached's answer when the line comes in pieces.
    b"x" * 2047 + b"\r\n", (b"x" * 2048 + b"\r", b"\n"),
    (b"x" * 2049, b"\r\n"), (b"x" * 3000, b"\r\n"),
    (b"set k 0 0 1" + b" " * 3000, b"\r\nx\r\n"),
    (b"get " + b"a " * 3000, b"\r\n"),
    (b"gets " + b"a " * 3000, b"\r\n"),
    (b" " * 100 + b"get " + b"a " * 3000, b"\r\n"),
    (b" " * 101 + b"get " + b"a " * 3000, b"\r\n"),
    (b"gat 0 " + b"a " * 3000, b"\r\n"),
    (b"mg " + b"a " * 3000, b"\r\n"),
    b"get k\x00junk\r\n", b"\x00version\r\n", b"set k\x00 0 0 1\r\nx\r\n",
    b"set k 0 0 1\x00 zz\r\nx\r\n", b"set k 0 0 1\t\r\nx\r\n",
    b"set a\tb 0 0 1\r\nx\r\n", b"set k 0 0 1\r\r\nx\r\n",
    b"mg\r\n", b"mg mk zz\r\n", b"mg mk v v\r\n", b"mg mk Tx\r\n",
    b"mg mk T\r\n", b"mg mk O" + b"1" * 31 + b"\r\n",
    b"mg mk O" + b"1" * 32 + b"\r\n", b"mg mk Tx Dx\r\n", b"mg mk Dx Tx\r\n",
    b"mg mk Tx zz\r\n", b"mg mk Fx\r\n", b"mg mk F5 D9 J1 MZ I C5\r\n",
    b"mg mk \x80\r\n", b"mg mk P L Pfoo\r\n",
    b"mg mk a b c d e f g h i j k l m n o p q r\r\n", b"mg mk E5\r\n",
    b"mg mk x\r\n", b"ms\r\n", b"ms k\r\n", b"ms k x\r\nhi\r\n",
    b"ms k -1\r\nhi\r\n", b"ms k 2 zz\r\nhi\r\n", b"ms k 2 MZ\r\nhi\r\n",
    b"ms k 2 MEE\r\nhi\r\n", b"ms k 2 Ms\r\nhi\r\n", b"ms k 2 Cx\r\nhi\r\n",
    b"ms k 2 Fx\r\nhi\r\n", b"ms k 2 S5\r\nhi\r\n", b"ms k 3\r\nhi\r\n",
    b"ms k 2 O" + b"1" * 33 + b"\r\nhi\r\n",
    b"ms k 2 a b c d e f g h i j k l m n o p q r\r\nhi\r\n",
    b"ms k 2\r\nhiX\r\n", b"ms k 2 q\r\nhiX\r\n",
    b"ms big 2000000 T0\r\n" + b"x" * 2000000 + b"\r\n",
    b"ms k 2147483646\r\n", b"ms k 4294967298\r\nhi\r\n",
    b"md\r\n", b"md k zz\r\n", b"md k q q\r\n", b"md k Tx\r\n",
    b"md k O" + b"1" * 33 + b"\r\n", b"md k x\r\n",
    b"md k a b c d e f g h i j k l m n o p q r\r\n",
    b"ma\r\n", b"ma c Mx v\r\n", b"ma c MII v\r\n", b"ma c Dx\r\n",
    b"ma c D-1\r\n", b"ma c D18446744073709551616\r\n", b"ma c Jx\r\n",
    b"ma c zz\r\n", b"ma c O" + b"1" * 33 + b"\r\n",
    b"me\r\n", b"me c b\r\n", b"me Yw== b\r\n", b"me c x y z\r\n",
    b"me " + b"a" * 251 + b"\r\n",
    b"mg Zm9 b\r\n", b"mg Zm9v! b k\r\n", b"mg Z=== b k\r\n",
    b"mg ==== b k\r\n", b"mg Zm9vYg b k\r\n", b"mg !!!! b k\r\n",
    b"md Zm9 b\r\n", b"ma Zm9 b\r\n", b"ms Zm9 2 b\r\nhi\r\n",
]

WORDS = [b"get", b"gets", b"gat", b"gats", b"bget", b"set", b"add",
         b"replace", b"append", b"prepend", b"cas", b"delete", b"incr",
         b"decr", b"touch", b"flush_all", b"version", b"verbosity",
         b"mn", b"mg", b"ms", b"md", b"ma", b"me", b"shutdown", b"foo",
         b"GET", b"m", b"mx", b"x", b"sett", b"g"]
NUMS = [b"0", b"1", b"2", b"5", b"-1", b"+5", b"4294967295", b"4294967296",
        b"18446744073709551615", b"18446744073709551616",
        b"-18446744073709551615", b"2147483647", b"2147483648",
        b"-2147483649", b"9223372036854775807", b"9223372036854775808",
        b"-9223372036854775808", b"-9223372036854775809", b"abc", b"5x",
        b"\t5", b"5\t", b"0x10", b"00007", b"-0", b"+", b"-", b"2592001",
        b"\x0b3", b"3\x0cz", b"1-", b"5\t-"]
KEYS = [b"k", b"k1", b"foo", b"a" * 250, b"a" * 251, b"a\tb", b"a\x01b",
        b"a\x7fb", b"\xff\xfe", b"noreply", b"0", b"Zm9v", b"Zg==", b"Zm9",
        b"Zg=x", b"AAEC", b"Zm9v!", b"Z===", b"bm9rZXk="]
FLAGS = [b"b", b"c", b"f", b"h", b"k", b"l", b"O", b"Oabc", b"O" + b"x" * 31,
         b"O" + b"x" * 32, b"P", b"Pfoo", b"L", b"s", b"t", b"u", b"v",
         b"N30", b"N", b"Nx", b"R5", b"T0", b"T-1", b"Tx", b"T", b"F5",
         b"F4294967296", b"Fx", b"C1", b"Cx", b"ME", b"MA", b"MP", b"MR",
         b"MS", b"MZ", b"MEE", b"M", b"MI", b"M+", b"MD", b"M-", b"Ms",
         b"J5", b"Jx", b"D3", b"Dx", b"D-1", b"I", b"E5", b"x", b"S5", b"zz",
         b"\x80", b"\x7f", b"vfoo", b"kk"]
ENDS = [b"\r\n"] * 8 + [b"\n", b"\r\r\n", b" \r\n", b"\x00x\r\n"]


def gen_tokens(rng, word):
    """Arguments for WORD: mostly well-formed, often not."""
    toks = []
    if word in (b"mg", b"ms", b"md", b"ma", b"me"):
        if rng.random() < 0.95:
            toks.append(rng.choice(KEYS))
        if word == b"ms" and rng.random() < 0.9:
            toks.append(rng.choice([b"0", b"1", b"2", b"3"] + NUMS))
        for _ in range(rng.choice([0, 1, 2, 3, 5, 17, 18])):
            toks.append(rng.choice(FLAGS))
        return toks
    n = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8])
    for i in range(n):
        r = rng.random()
        if i == 0 and r < 0.7:
            toks.append(rng.choice(KEYS))
        elif r < 0.6:
            toks.append(rng.choice([b"0", b"1", b"2", b"3"]))
        elif r < 0.9:
            toks.append(rng.choice(NUMS))
        else:
            toks.append(rng.choice([b"noreply", b"junk", b"HTTP/1.1"]))
    if rng.random() < 0.2:
        toks.append(b"noreply")
    return toks


def gen_command(rng):
    word = rng.choice(WORDS)
    toks = gen_tokens(rng, word)
    sep = b"  " if rng.random() < 0.1 else b" "
    line = sep.join([word] + toks)
    if rng.random() < 0.05:
        line = b" " * rng.choice([1, 3]) + line
    out = line + rng.choice(ENDS)
    # A data block: the declared length, or one off, or none at all.
    if word in (b"set", b"add", b"replace", b"append", b"prepend", b"cas",
                b"ms") and rng.random() < 0.9:
        size = rng.choice([0, 1, 2, 3])
        if rng.random() < 0.2:
            size += rng.choice([-1, 1])
        out += b"abcdefgh"[:max(size, 0)] + rng.choice(
            [b"\r\n"] * 6 + [b"\n", b"xx", b""])
    return out


def gen_case(rng):
    """One to three commands, each its own piece on the wire."""
    return tuple(gen_command(rng) for _ in range(rng.choice([1, 1, 2, 3])))


def free_port():
    return ports.free_port()


def start_memcached(path):
    port = free_port()
    args = [path, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1"]
    if os.geteuid() == 0:
        args += ["-u", "nobody"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    proc.wait()
    sys.exit("memcached did not start")


def talk(port, chunks, wait):
    """memcached's answer to CHUNKS, sent 0.1 s apart, and SENTINEL after
    them: (bytes, closed). Pieces sent apart are read apart: memcached
    writes the replies to one read before the next, so its batching quirks
    (below) stay out of the comparison."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    out = b""
    closed = False
    try:
        for i, c in enumerate(chunks + (SENTINEL,)):
            if i > 0:
                time.sleep(0.1 if len(c) > 1000 else 0.02)
            s.sendall(c)
        while not out.endswith(SENTINEL_REPLY):
            d = s.recv(1 << 16)
            if not d:
                closed = True
                break
            out += d
    except socket.timeout:
        pass
    except OSError:
        closed = True
    s.close()
    return out, closed


# The end of every case: mg of a key never stored, answered "EN k__end__"
# by memcached 1.6.18 and "." by the model.
SENTINEL = b"mg __end__ k\r\n"
SENTINEL_REPLY = b"EN k__end__\r\n"

SEMANTIC = (b"CLIENT_ERROR cannot increment or decrement non-numeric value",)


def classes_of_memcached(out, closed):
    if out.endswith(SENTINEL_REPLY):
        out = out[:-len(SENTINEL_REPLY)]
    cls = []
    i = 0
    while True:
        j = out.find(b"\r\n", i)
        if j < 0:
            break
        line = out[i:j]
        i = j + 2
        skip = None
        parts = line.split(b" ")
        if line.startswith(b"VALUE ") and len(parts) >= 4:
            skip = int(parts[3])
        elif line.startswith(b"VA ") and len(parts) >= 2:
            skip = int(parts[1])
        if skip is not None:
            i += skip + 2
        if line in SEMANTIC:
            cls.append(b".")
        elif line == b"MN" or line.split(b" ")[0] in (
                b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR", b"ERROR:"):
            cls.append(line)
        else:
            cls.append(b".")
    if closed:
        cls.append(b"CLOSED")
    return squash(cls)


def squash(cls):
    out = []
    for c in cls:
        if c == b"." and out and out[-1] == b".":
            continue
        out.append(c)
    return out


def classes_of_model(model, data, tmpdir):
    path = os.path.join(tmpdir, "case")
    with open(path, "wb") as f:
        f.write(data)
    res = subprocess.run([model, path], stdout=subprocess.PIPE, check=True)
    cls = [c for c in res.stdout.split(b"\n") if c != b""]
    if data.endswith(SENTINEL) and cls and cls[-1] == b".":
        cls.pop()                   # the sentinel's answer
    return cls


def matches(mine, theirs):
    """MINE's "?" matches "." or nothing. When the model ends waiting for
    bytes, memcached may not have written the replies before that yet (a
    refused data block's SERVER_ERROR goes out once it is swallowed), so
    any prefix of MINE matches. When it ends closing, memcached drops the
    replies of the same read it had not written yet, so any prefix of MINE
    followed by CLOSED matches."""
    if mine and mine[-1] in (b"WAIT", b"CLOSED"):
        end = mine[-1]
        mine = mine[:-1]
        tail = [b"CLOSED"] if end == b"CLOSED" else []
        if end == b"CLOSED" and (not theirs or theirs[-1] != b"CLOSED"):
            return False
        rest = theirs[:-1] if tail else theirs
        return any(walk_squashed(mine[:n], rest)
                   for n in range(len(mine) + 1))
    return walk_squashed(mine, theirs)


def walk_squashed(mine, theirs):
    """Try every reading of the "?" entries, squash, compare."""
    idx = [i for i, c in enumerate(mine) if c == b"?"]
    for mask in range(1 << len(idx)):
        cand = []
        for i, c in enumerate(mine):
            if c != b"?":
                cand.append(c)
            elif mask & (1 << idx.index(i)):
                cand.append(b".")
        if squash(cand) == theirs:
            return True
    return False


CASES = bt.Cases()


@CASES
def vs_memcached(a):
    if not os.access(a.memcached, os.X_OK):
        raise bt.Skip("no memcached binary at %s" % a.memcached)
    rng = random.Random(a.seed)
    cases = [c if isinstance(c, tuple) else (c,) for c in FIXED]
    cases += [gen_case(rng) for _ in range(a.cases)]

    proc, port = start_memcached(a.memcached)
    bad = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for case in cases:
                mine = classes_of_model(a.model, b"".join(case) + SENTINEL,
                                        tmp)
                wait = 0.3 if b"WAIT" in mine or b"CLOSED" in mine else 2.0
                out, closed = talk(port, case, wait)
                theirs = classes_of_memcached(out, closed)
                if not matches(mine, theirs):
                    bad += 1
                    if bad <= 20:
                        print("MISMATCH %r\n  mctext:    %r\n  memcached: "
                              "%r (%r)" % (b"".join(case)[:200], mine, theirs,
                                           out[:200]))
    finally:
        proc.terminate()
        proc.wait()
    print("%d cases, %d mismatches" % (len(cases), bad))
    return 1 if bad else 0


def main():
    return bt.main(CASES, options=[
        ("--model", {}),
        ("--memcached", dict(default=shutil.which("memcached")
                             or "/usr/bin/memcached")),
        ("--cases", dict(type=int, default=2000)),
        ("--seed", dict(type=int, default=1))], need=["model"])


if __name__ == "__main__":
    sys.exit(main())
