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

As a command, for the shell tests: `python3 ports.py [N]` prints N free
ports (1 by default), one per line; `python3 ports.py --cluster N [--etcd
M]` prints a --base-port for deploy/brim-cluster (cluster_base()).
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


def _release(ports):
    """Drop this process's reservation files of PORTS."""
    for port in ports:
        try:
            os.unlink(os.path.join(DIR, str(port)))
        except FileNotFoundError:
            pass


def _range():
    hi = min(PORT_HI, ephemeral_low())
    return PORT_LO, hi


def free_set(offsets):
    """A port BASE with BASE+o free and reserved for this process for every
    o in OFFSETS (>= 0).  Raises AssertionError when none is found in 500
    tries."""
    offsets = sorted(set(offsets))
    lo, hi = _range()
    span = offsets[-1] + 1
    if hi - span <= lo:
        raise AssertionError("port range %d..%d too small for offsets up "
                             "to %d" % (lo, hi, span - 1))
    start = int.from_bytes(os.urandom(4), "little") % (hi - span - lo)
    for i in range(500):
        base = lo + (start + i * (len(offsets) + 7)) % (hi - span - lo)
        want = [base + o for o in offsets]
        if any(p in _given for p in want):
            continue
        if not all(bindable(p) for p in want):
            continue
        taken = []
        for p in want:
            if not _reserve(p):
                break
            taken.append(p)
        if len(taken) < len(want):
            _release(taken)      # one was held elsewhere: free the rest
            continue
        _given.update(want)
        return base
    raise AssertionError("no free ports at offsets %s in %d..%d"
                         % (offsets, lo, hi))


def free_base(n=1, also=()):
    """A port BASE with BASE..BASE+N-1 free and reserved, and each of them
    plus every offset in ALSO (free_set())."""
    return free_set([i + a for i in range(n) for a in [0] + list(also)])


def cluster_base(n, etcd=0):
    """A --base-port for deploy/brim-cluster with N ports of its own
    (the coordinator and the nodes, added ones included): BASE..BASE+N-1
    and their memcached ports (+1000, BRIM_CLUSTER_MC_OFFSET's default);
    with ETCD members, a second coordinator (+1999) and etcd's client and
    peer ports (+2000 ..)."""
    offsets = [i + a for i in range(n) for a in (0, 1000)]
    if etcd:
        offsets += range(1999, 2000 + 2 * etcd + 2)
    return free_set(offsets)


def free_port():
    """One free loopback port (see the module's text)."""
    return free_base(1)


def main(argv):
    """ports.py [COUNT] | --cluster N [--etcd M]: COUNT free ports, one per
    line, or a --base-port for deploy/brim-cluster (cluster_base())."""
    if argv and argv[0] == "--cluster":
        etcd = int(argv[3]) if len(argv) > 3 and argv[2] == "--etcd" else 0
        print(cluster_base(int(argv[1]), etcd))
        return 0
    for _ in range(int(argv[0]) if argv else 1):
        print(free_port())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
