#!/usr/bin/env python3
"""tests/cluster/client_bench_secret.py - brim-bench --secret-file against a
local cluster whose nodes and coordinator require a client secret
(deploy/brim-cluster up --client-secret: every process started with
--client-secret-file DIR/client-secret, PROTOCOL.md 12).

    client_bench_secret.py --list
    client_bench_secret.py --bench BIN --cluster SCRIPT --bin BUILD/bin CASE

Cases (each its own CTest test, tests/bench.cmake):
  verify   --coordinator ... --secret-file DIR/client-secret --verify on
           three nodes: the map fetch, every load connection and the
           evictions probes prove the secret; lost=0 stale=0 errors=0,
           exit 0, and no request was refused
  refused  the same cluster without --secret-file: the coordinator
           refuses MAP_FETCH (DENIED, "requires AUTH"), exit 1, no report
  wrong    a secret file of other bytes: the coordinator's proof does not
           check out, brim-bench says so and exits 1

Every process is stopped by PID (brim-cluster down, in a finally block);
every wait is bounded. The cluster harness is bench_cluster.py's.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cluster as bc  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class SecretCluster(bc.Cluster):
    """bench_cluster's local cluster, its nodes requiring a client secret."""

    def up(self):
        self.run("up", "--nodes", str(self.nodes), "--base-port",
                 str(self.base), "--client-secret")
        self.secret = os.path.join(self.dir, "client-secret")
        if not os.path.exists(self.secret):
            bc.fail("up --client-secret wrote no %s" % self.secret)


def run_bench(args, cl, extra, timeout=120):
    cmd = [args.bench, "--target", "brim", "--coordinator", cl.coord(),
           "--connections", "4", "--keys", "2000", "--duration", "2",
           "--json", "--quiet"] + list(extra)
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr[-4000:])
    return p


@case
def verify(args):
    cl = SecretCluster(args, 3)
    try:
        cl.up()
        p = run_bench(args, cl, ["--secret-file", cl.secret, "--verify"])
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            bc.fail("no JSON from brim-bench (exit %d)" % p.returncode)
        r, rc = json.loads(lines[-1]), p.returncode
        if rc != 0 or r["errors"] != 0 or r["lost"] != 0 or r["stale"] != 0:
            bc.fail("exit %d lost=%d stale=%d errors=%d" % (
                rc, r["lost"], r["stale"], r["errors"]))
        if r["ops"] == 0 or r["nodes"] != 3:
            bc.fail("ops=%d nodes=%d" % (r["ops"], r["nodes"]))
        if "DENIED" in p.stderr:
            bc.fail("a request was refused for want of a proof")
        if r.get("evictions") is None or "warning" in p.stderr:
            bc.fail("the evictions probes (STATS after AUTH) failed")
    finally:
        cl.down()


@case
def refused(args):
    cl = SecretCluster(args, 2)
    try:
        cl.up()
        p = run_bench(args, cl, [])
        if p.returncode != 1 or "DENIED" not in p.stderr \
                or "requires AUTH" not in p.stderr:
            bc.fail("without the secret: exit %d, stderr %r" % (
                p.returncode, p.stderr))
        if any(ln.startswith("{") for ln in p.stdout.splitlines()):
            bc.fail("a refused run printed a report")
    finally:
        cl.down()


@case
def wrong(args):
    cl = SecretCluster(args, 2)
    try:
        cl.up()
        other = os.path.join(cl.dir, "other-secret")
        fd = os.open(other, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32))
        os.close(fd)
        p = run_bench(args, cl, ["--secret-file", other])
        if p.returncode != 1 or "proof of the secret is wrong" not in p.stderr:
            bc.fail("another secret: exit %d, stderr %r" % (p.returncode,
                                                            p.stderr))
    finally:
        cl.down()


def main():
    # bench_cluster.main() parses the same options and runs a case of its
    # CASES: these cases instead.
    bc.CASES.clear()
    bc.CASES.update(CASES)
    bc.main()


if __name__ == "__main__":
    main()
