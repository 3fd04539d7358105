"""Free loopback ports for the tests' servers, from one allocator.

A port the OS hands out for bind(port 0) comes from the ephemeral range,
the same range every outgoing connection's local port comes from: between
a test releasing such a port and its server binding it, a client socket
of the same or another test (ctest runs two at once) can take it, and the
server fails with "address already in use" (seen in CI: a memcached port
in mcport.gat_split_by_owner). So ports come from below the ephemeral
range (/proc/sys/net/ipv4/ip_local_port_range), where no connect() takes
them, from a random start, each checked by binding it, and each reserved
for RESERVE_S seconds by a file in DIR (O_EXCL), so two tests running at
once never pick the same one.

As a command: `python3 ports.py [N]` prints N free ports (1 by default),
one per line, for the shell tests.
"""

import os
import socket
import sys
import tempfile
import time

PORT_LO = 20000
PORT_HI = 32000          # lowered to the ephemeral range's start if below
RESERVE_S = 600.0
DIR = os.path.join(tempfile.gettempdir(), "brim-test-ports")

_given = set()           # this process's ports: never handed out twice


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port):
    """True when 127.0.0.1:PORT can be bound now (as libuv binds it, with
    SO_REUSEADDR, so a port in TIME_WAIT counts as free)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _reserve(port):
    """Take PORT's reservation file; False when another live one holds it."""
    os.makedirs(DIR, exist_ok=True)
    path = os.path.join(DIR, str(port))
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                             0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - os.stat(path).st_mtime < RESERVE_S:
                    return False
                os.unlink(path)            # stale: its test is long gone
            except FileNotFoundError:
                pass
    return False


def _range():
    hi = min(PORT_HI, ephemeral_low())
    return PORT_LO, hi


def free_base(n=1, also=()):
    """A port BASE with BASE..BASE+N-1 (and each of them plus every offset
    in ALSO) free and reserved for this process.  Raises AssertionError
    when none is found in 500 tries."""
    lo, hi = _range()
    span = max(offsets for offsets in list(also) + [0])
    top = hi - n - span
    if top <= lo:
        raise AssertionError("port range %d..%d too small for %d ports"
                             % (lo, hi, n))
    start = lo + int.from_bytes(os.urandom(4), "little") % (top - lo)
    for i in range(500):
        base = lo + (start - lo + i * (n + span + 7)) % (top - lo)
        want = [p + o for p in range(base, base + n) for o in [0] + list(also)]
        if any(p in _given for p in want):
            continue
        if not all(bindable(p) for p in want):
            continue
        if not all(_reserve(p) for p in want):
            continue
        _given.update(want)
        return base
    raise AssertionError("no %d free ports in %d..%d" % (n, lo, hi))


def free_port():
    """One free loopback port (see the module's text)."""
    return free_base(1)


if __name__ == "__main__":
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
        print(free_port())
