#!/usr/bin/env python3
"""deploy/multihost/delay_relay.py - a TCP relay that delays the data it
carries, for brim's multi-host tests (issue 6). This machine's kernel has
no netem qdisc, so a slow link is made in user space: every chunk read on
one side is written to the other DELAY ms after it arrived, in order, in
each direction separately (a round trip costs twice DELAY).

    delay_relay.py --listen HOST:PORT --target HOST:PORT --delay-ms MS
                   [--control PATH] [--max-queue-kb KB]
    delay_relay.py ctl PATH delay MS      change the delay of a running relay
    delay_relay.py ctl PATH status        its delay, connections and bytes

The delay applies to data queued at the moment it is due, so a change
takes effect at once, also for data already waiting. The control socket is
a Unix socket (PATH): it is reachable from every network namespace, so a
relay started inside a test host (deploy/multihost/netns.sh exec) can be
steered from outside. One command a line, one reply line:
  delay MS   -> "ok delay_ms=MS"
  status     -> "ok delay_ms=MS conns=C accepted=A up_bytes=U down_bytes=D"
SIGUSR1 prints the status line to stdout as well.

"up" is listener side to target side, "down" the other way. Each direction
holds at most --max-queue-kb (default 4096) of delayed data; past that it
stops reading from its source until the queue drains, so a fast sender is
slowed, not buffered without bound. A half-close is passed on after the
data before it; a reset or error closes both sides. Every connection,
delay change and close is printed to stdout, one line each.
Standard library only (asyncio); Python 3.7 or later.
"""
import argparse
import asyncio
import os
import signal
import socket
import sys
import time


def log(msg):
    print("delay_relay: %s" % msg, flush=True)


def host_port(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError("need HOST:PORT, got %r" % text)
    return host, int(port)


class Relay:
    """The listener, its connections and their counters."""

    def __init__(self, target, delay_ms, max_queue):
        self.target = target
        self.delay_ms = delay_ms
        self.max_queue = max_queue
        self.conns = 0              # open relayed connections
        self.accepted = 0           # every connection accepted
        self.bytes = {"up": 0, "down": 0}

    def status(self):
        return ("delay_ms=%d conns=%d accepted=%d up_bytes=%d down_bytes=%d"
                % (self.delay_ms, self.conns, self.accepted,
                   self.bytes["up"], self.bytes["down"]))

    def set_delay(self, ms):
        old, self.delay_ms = self.delay_ms, ms
        log("delay %d ms -> %d ms" % (old, ms))

    async def pump(self, reader, writer, direction):
        """Copy READER to WRITER, each chunk delay_ms after it was read.
        Returns when READER reaches EOF (passed on as a half-close) or
        either side fails (raises)."""
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()
        room = asyncio.Event()
        room.set()
        queued = [0]

        async def rx():
            while True:
                await room.wait()
                data = await reader.read(65536)
                queue.put_nowait((loop.time(), data))
                if not data:
                    return
                queued[0] += len(data)
                if queued[0] > self.max_queue:
                    room.clear()

        async def tx():
            while True:
                at, data = await queue.get()
                # Read the delay now, not at arrival: a change applies to
                # what is already waiting.
                wait = at + self.delay_ms / 1000.0 - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
                self.bytes[direction] += len(data)
                queued[0] -= len(data)
                if queued[0] <= self.max_queue // 2:
                    room.set()

        rx_task = asyncio.ensure_future(rx())
        try:
            await tx()
        finally:
            rx_task.cancel()
        await asyncio.gather(rx_task, return_exceptions=True)

    async def handle(self, creader, cwriter):
        peer = cwriter.get_extra_info("peername")
        self.accepted += 1
        n = self.accepted
        try:
            treader, twriter = await asyncio.wait_for(
                asyncio.open_connection(*self.target), 10)
        except (OSError, asyncio.TimeoutError) as e:
            log("conn %d from %s: cannot reach %s:%d: %s"
                % (n, peer, self.target[0], self.target[1], e))
            cwriter.close()
            return
        for w in (cwriter, twriter):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conns += 1
        log("conn %d from %s:%d to %s:%d open" % ((n,) + tuple(peer[:2])
                                                  + self.target))
        up = asyncio.ensure_future(self.pump(creader, twriter, "up"))
        down = asyncio.ensure_future(self.pump(treader, cwriter, "down"))
        why = "closed"
        try:
            # Both directions to EOF; the first failure ends both.
            done, _ = await asyncio.wait(
                (up, down), return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    why = "%s: %s" % (type(t.exception()).__name__,
                                      t.exception())
        finally:
            for t in (up, down):
                t.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            for w in (cwriter, twriter):
                w.close()
            self.conns -= 1
            log("conn %d %s (up %d bytes, down %d bytes in all)"
                % (n, why, self.bytes["up"], self.bytes["down"]))

    async def control(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                words = line.decode(errors="replace").split()
                if len(words) == 2 and words[0] == "delay" \
                        and words[1].isdigit():
                    self.set_delay(int(words[1]))
                    rep = "ok delay_ms=%d" % self.delay_ms
                elif words == ["status"]:
                    rep = "ok " + self.status()
                else:
                    rep = "error: commands are 'delay MS' and 'status'"
                writer.write((rep + "\n").encode())
                await writer.drain()
        finally:
            writer.close()


async def serve(a):
    relay = Relay(a.target, a.delay_ms, a.max_queue_kb * 1024)
    server = await asyncio.start_server(relay.handle, *a.listen,
                                        reuse_address=True)
    ctl = None
    if a.control:
        if os.path.exists(a.control):
            os.unlink(a.control)
        ctl = await asyncio.start_unix_server(relay.control, a.control)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1,
                            lambda: log("status " + relay.status()))
    log("listening on %s:%d -> %s:%d, delay %d ms each way%s (pid %d)"
        % (a.listen + a.target + (a.delay_ms,
           ", control " + a.control if a.control else "", os.getpid())))
    await stop.wait()
    log("stopping: " + relay.status())
    server.close()
    if ctl is not None:
        ctl.close()
        os.unlink(a.control)


def ctl(path, words, timeout=5.0):
    """Send one control command to the relay at PATH; returns its reply."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall((" ".join(words) + "\n").encode())
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n") and time.monotonic() < deadline:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    return buf.decode(errors="replace").strip()


def main(argv):
    if argv[:1] == ["ctl"]:
        if len(argv) < 3:
            print("usage: delay_relay.py ctl PATH delay MS|status",
                  file=sys.stderr)
            return 64
        rep = ctl(argv[1], argv[2:])
        print(rep)
        return 0 if rep.startswith("ok") else 1
    ap = argparse.ArgumentParser(
        description="TCP relay adding a fixed delay to each direction")
    ap.add_argument("--listen", type=host_port, required=True,
                    help="HOST:PORT to accept on")
    ap.add_argument("--target", type=host_port, required=True,
                    help="HOST:PORT to connect each accepted client to")
    ap.add_argument("--delay-ms", type=int, default=0,
                    help="delay of each direction's data (default 0)")
    ap.add_argument("--control", metavar="PATH",
                    help="Unix socket for 'delay MS' and 'status'")
    ap.add_argument("--max-queue-kb", type=int, default=4096,
                    help="delayed bytes held per direction (default 4096)")
    a = ap.parse_args(argv)
    if a.delay_ms < 0 or a.max_queue_kb < 1:
        ap.error("--delay-ms must be >= 0 and --max-queue-kb >= 1")
    try:
        asyncio.run(serve(a))
    except OSError as e:
        print("delay_relay: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
