"""tests/support/brimwire.py - brim's wire protocol for process-level
tests, in Python. The opcodes, roles and statuses are brimtest's, read from
the C headers.

Frames are a 4-byte big-endian body length, then one msgpack array
(proto/PROTOCOL.md): requests [op, request_id, epoch, args...], replies
[status, request_id, ...]. msgpack comes from Debian's python3-msgpack when
the interpreter has it; otherwise from the small codec below, which covers
what brim sends (nil, bool, ints, floats, str, bin, arrays, maps). The
strict decoder `strict_unpack` is always the codec below: the tests use it
to decide whether a random body is malformed msgpack.

Also here: starting and stopping a brim-node by PID, and reading its RSS and
CPU time from /proc. Every wait is bounded.
"""

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import brimtest
import ports

try:                                    # Debian: python3-msgpack
    import msgpack as _msgpack
except ImportError:                     # a pyenv or venv without it
    _msgpack = None

# ---- protocol constants: read from proto/ops.h and <brim/status.h> ----

OP = brimtest.OP                        # every defined op, NAME -> code
ST = brimtest.ST                        # wire statuses, NAME -> value
ST_NAME = brimtest.ST_NAME
ROLE = brimtest.ROLE                    # enum brim_role, CLIENT -> 1 ...
ROLE_CLIENT, ROLE_ADMIN = ROLE["CLIENT"], ROLE["ADMIN"]
WIRE_STATUS_MAX = brimtest.WIRE_STATUS_MAX


class CodecError(ValueError):
    """Malformed msgpack."""


# ---- the small codec ----

def _pack(o, out):
    if o is None:
        out.append(b"\xc0")
    elif o is True:
        out.append(b"\xc3")
    elif o is False:
        out.append(b"\xc2")
    elif isinstance(o, int):
        if 0 <= o < 0x80:
            out.append(bytes([o]))
        elif -32 <= o < 0:
            out.append(struct.pack("b", o))
        elif 0 <= o <= 0xff:
            out.append(b"\xcc" + bytes([o]))
        elif 0 <= o <= 0xffff:
            out.append(b"\xcd" + struct.pack(">H", o))
        elif 0 <= o <= 0xffffffff:
            out.append(b"\xce" + struct.pack(">I", o))
        elif 0 <= o < 1 << 64:
            out.append(b"\xcf" + struct.pack(">Q", o))
        elif -(1 << 63) <= o < 0:
            out.append(b"\xd3" + struct.pack(">q", o))
        else:
            raise CodecError("integer out of range")
    elif isinstance(o, float):
        out.append(b"\xcb" + struct.pack(">d", o))
    elif isinstance(o, str):
        b = o.encode()
        n = len(b)
        if n < 32:
            out.append(bytes([0xa0 | n]))
        elif n <= 0xff:
            out.append(b"\xd9" + bytes([n]))
        elif n <= 0xffff:
            out.append(b"\xda" + struct.pack(">H", n))
        else:
            out.append(b"\xdb" + struct.pack(">I", n))
        out.append(b)
    elif isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        n = len(b)
        if n <= 0xff:
            out.append(b"\xc4" + bytes([n]))
        elif n <= 0xffff:
            out.append(b"\xc5" + struct.pack(">H", n))
        else:
            out.append(b"\xc6" + struct.pack(">I", n))
        out.append(b)
    elif isinstance(o, (list, tuple)):
        n = len(o)
        if n < 16:
            out.append(bytes([0x90 | n]))
        elif n <= 0xffff:
            out.append(b"\xdc" + struct.pack(">H", n))
        else:
            out.append(b"\xdd" + struct.pack(">I", n))
        for e in o:
            _pack(e, out)
    elif isinstance(o, dict):
        n = len(o)
        if n < 16:
            out.append(bytes([0x80 | n]))
        elif n <= 0xffff:
            out.append(b"\xde" + struct.pack(">H", n))
        else:
            out.append(b"\xdf" + struct.pack(">I", n))
        for k, v in o.items():
            _pack(k, out)
            _pack(v, out)
    else:
        raise CodecError("cannot pack %r" % type(o))


def _need(buf, pos, n):
    if pos + n > len(buf):
        raise CodecError("truncated at %d: need %d bytes" % (pos, n))


def _unpack(buf, pos, depth):
    """One object at BUF[POS:]; returns (object, next position)."""
    if depth > 64:
        raise CodecError("too deep")
    _need(buf, pos, 1)
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    if b >= 0xe0:
        return b - 0x100, pos
    if 0x80 <= b <= 0x8f:
        return _unpack_map(buf, pos, b & 0x0f, depth)
    if 0x90 <= b <= 0x9f:
        return _unpack_array(buf, pos, b & 0x0f, depth)
    if 0xa0 <= b <= 0xbf:
        return _unpack_str(buf, pos, b & 0x1f)
    simple = {0xc0: None, 0xc2: False, 0xc3: True}
    if b in simple:
        return simple[b], pos
    fixed = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b",
             0xd1: ">h", 0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}
    if b in fixed:
        n = struct.calcsize(fixed[b])
        _need(buf, pos, n)
        return struct.unpack_from(fixed[b], buf, pos)[0], pos + n
    lens = {0xc4: ">B", 0xc5: ">H", 0xc6: ">I", 0xd9: ">B", 0xda: ">H",
            0xdb: ">I", 0xdc: ">H", 0xdd: ">I", 0xde: ">H", 0xdf: ">I",
            0xc7: ">B", 0xc8: ">H", 0xc9: ">I"}
    if b in lens:
        w = struct.calcsize(lens[b])
        _need(buf, pos, w)
        n = struct.unpack_from(lens[b], buf, pos)[0]
        pos += w
        if b in (0xc4, 0xc5, 0xc6):
            _need(buf, pos, n)
            return bytes(buf[pos:pos + n]), pos + n
        if b in (0xd9, 0xda, 0xdb):
            return _unpack_str(buf, pos, n)
        if b in (0xdc, 0xdd):
            return _unpack_array(buf, pos, n, depth)
        if b in (0xde, 0xdf):
            return _unpack_map(buf, pos, n, depth)
        _need(buf, pos, 1 + n)          # ext: type byte, then N bytes
        return ("ext", buf[pos], bytes(buf[pos + 1:pos + 1 + n])), pos + 1 + n
    fixext = {0xd4: 1, 0xd5: 2, 0xd6: 4, 0xd7: 8, 0xd8: 16}
    if b in fixext:
        n = fixext[b]
        _need(buf, pos, 1 + n)
        return ("ext", buf[pos], bytes(buf[pos + 1:pos + 1 + n])), pos + 1 + n
    raise CodecError("reserved byte 0x%02x at %d" % (b, pos - 1))


def _unpack_str(buf, pos, n):
    _need(buf, pos, n)
    raw = bytes(buf[pos:pos + n])
    try:
        return raw.decode(), pos + n
    except UnicodeDecodeError:
        return raw, pos + n             # brim treats str as bytes


def _unpack_array(buf, pos, n, depth):
    if n > len(buf) - pos:              # each element needs a byte
        raise CodecError("array of %d with %d bytes left" % (n, len(buf) - pos))
    out = []
    for _ in range(n):
        o, pos = _unpack(buf, pos, depth + 1)
        out.append(o)
    return out, pos


def _unpack_map(buf, pos, n, depth):
    if 2 * n > len(buf) - pos:
        raise CodecError("map of %d with %d bytes left" % (n, len(buf) - pos))
    out = {}
    for _ in range(n):
        k, pos = _unpack(buf, pos, depth + 1)
        v, pos = _unpack(buf, pos, depth + 1)
        try:
            out[k] = v
        except TypeError:               # an unhashable key: keep the pair
            out[repr(k)] = v
    return out, pos


def strict_unpack(buf):
    """Exactly one object filling BUF, else CodecError (the small codec)."""
    obj, pos = _unpack(memoryview(bytes(buf)), 0, 0)
    if pos != len(buf):
        raise CodecError("%d trailing bytes" % (len(buf) - pos))
    return obj


def small_pack(obj):
    out = []
    _pack(obj, out)
    return b"".join(out)


def pack(obj):
    if _msgpack is not None:
        return _msgpack.packb(obj, use_bin_type=True)
    return small_pack(obj)


def unpack(buf):
    if _msgpack is not None:
        return _msgpack.unpackb(bytes(buf), raw=False, strict_map_key=False,
                                unicode_errors="surrogateescape")
    return strict_unpack(buf)


def codec_name():
    return "python3-msgpack" if _msgpack is not None else "builtin"


# ---- frames and requests ----

def frame(body):
    return struct.pack(">I", len(body)) + body


def req_body(op, rid, *args):
    return pack([OP[op] if isinstance(op, str) else op, rid, 0] + list(args))


def req(op, rid, *args):
    """One request frame: [op, RID, epoch 0, ARGS...]."""
    return frame(req_body(op, rid, *args))


def hello(rid=1, role=ROLE_CLIENT):
    return req("HELLO", rid, 1, 0, role, 0)


class Closed(Exception):
    """The peer closed the connection."""


class Conn:
    """A blocking client connection with bounded waits."""

    def __init__(self, port, timeout=5.0, do_hello=True, role=ROLE_CLIENT):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()
        if do_hello:
            self.send(hello(1, role))
            rep = self.reply()
            if rep[0] != 0:
                raise AssertionError("HELLO refused: %r" % (rep,))

    def send(self, data):
        self.sock.sendall(data)

    def frame(self, timeout=None):
        """The next reply frame's body; Closed on EOF; socket.timeout."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack_from(">I", self.buf)[0]
                if len(self.buf) >= 4 + n:
                    body = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return body
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no reply within %.1f s" %
                                     (timeout or self.timeout))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed("closed by the node (%d bytes of a partial "
                             "frame buffered)" % len(self.buf))
            self.buf += chunk

    def reply(self, timeout=None):
        return unpack(self.frame(timeout))

    def call(self, op, rid, *args, timeout=None):
        self.send(req(op, rid, *args))
        rep = self.reply(timeout)
        if rep[1] != rid and not (rep[0] != 0 and rep[1] == 0):
            raise AssertionError("reply to %d carries id %r: %r" %
                                 (rid, rep[1], rep))
        return rep

    def wait_closed(self, timeout):
        """Read until EOF within TIMEOUT; returns the frames read before."""
        frames = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection still open after %.1f s "
                                     "(frames %r)" % (timeout, frames))
            try:
                frames.append(unpack(self.frame(left)))
            except Closed:
                return frames
            except socket.timeout:
                continue

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def reset(self):
        """Close with RST (SO_LINGER 0): pending data is discarded."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
        self.sock.close()


def stats(conn, rid=999):
    rep = conn.call("STATS", rid)
    if rep[0] != 0 or not isinstance(rep[2], dict):
        raise AssertionError("STATS failed: %r" % (rep,))
    return rep[2]


# ---- the node process ----

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "WARNING: ThreadSanitizer")


def free_port():
    """A free loopback port below the ephemeral range (ports.py)."""
    return ports.free_port()


def is_sanitized(binary):
    """True when BINARY was built with ASan (its RSS is then inflated)."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


class Node:
    """A brim-node --standalone on a free loopback port, stopped by PID."""

    def __init__(self, binary, *args, start_timeout=15.0):
        self.binary = binary
        self.sanitized = is_sanitized(binary)
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="brim-node-",
                                               suffix=".log", delete=False)
        env = dict(os.environ)
        if self.sanitized:
            # ASan's quarantine keeps up to 256 MiB of freed memory resident
            # by default, which would swamp the RSS bounds; 16 MiB still
            # catches a use after a recent free.
            env["ASAN_OPTIONS"] = ("quarantine_size_mb=16:detect_leaks=1:"
                                   + env.get("ASAN_OPTIONS", ""))
        self.cmd = [binary, "--standalone", "--listen",
                    "127.0.0.1:%d" % self.port] + [str(a) for a in args]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        self.pid = self.proc.pid
        self.exit_code = None
        deadline = time.monotonic() + start_timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("brim-node exited at start (%d):\n%s" %
                                     (self.proc.returncode, self.output()))
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         timeout=1.0).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("brim-node did not accept within "
                                         "%.0f s" % start_timeout)
                time.sleep(0.05)

    def conn(self, **kw):
        return Conn(self.port, **kw)

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS for %d" % self.pid)

    def cpu_s(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is field 3 (state): utime is field 14, stime 15.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def output(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self, timeout=15.0):
        """SIGTERM, then SIGKILL after TIMEOUT. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                self.exit_code = "killed after SIGTERM timed out"
                return self.exit_code
        self.exit_code = self.proc.returncode
        return self.exit_code

    def check_clean(self):
        """After stop(): exit 0 and no sanitizer report in the output."""
        out = self.output()
        for mark in SANITIZER_MARKS:
            if mark in out:
                raise AssertionError("sanitizer report in brim-node's "
                                     "output:\n%s" % out[-8000:])
        if self.exit_code != 0:
            raise AssertionError("brim-node did not exit cleanly after "
                                 "SIGTERM: %r\n%s" % (self.exit_code,
                                                      out[-4000:]))

    def cleanup(self):
        if os.environ.get("BRIM_KEEP_LOGS"):
            print("node log kept: %s" % self.log.name)
            return
        try:
            os.unlink(self.log.name)
        except OSError:
            pass
