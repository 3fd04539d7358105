#!/usr/bin/env python3
"""tests/lint/help_all.py - every program answers --help (a new user's
report: test binaries ran their suite, fuzz replays said "--help: not
found", bench scripts started servers and clusters).

--bin BIN: every executable of BIN (the build's bin/) run with --help,
and again with -h (a tester's report: brim-bench and the two C bench
programs refused -h), must exit 0 within 10 s and print a usage
("usage:" on its first line).
--scripts ROOT: every deploy/*.sh and deploy/bench/*.sh that starts with
#! is copied with deploy/ into a scratch tree whose build/bin holds stub
daemons, and run with --help under a PATH where every command but bash,
env, dirname, sed and cat is a stub that records its call: each must
exit 0 within 10 s, print something and call no stub (so it started
nothing). A deploy/bench script must also refuse --no-such-option and
a non-numeric argument with one line on stderr, exit 2, calling no stub.

Usage: help_all.py --bin BIN | --scripts ROOT | --selftest BIN ROOT
Prints each program that fails; exit 1 if any, 0 if none, 2 on a usage
error.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

REAL = ("bash", "env", "dirname", "sed", "cat")
DAEMONS = ("brim-node", "brim-coord", "brimctl", "brim-bench", "brim-sim")
STUB = "#!/bin/sh\necho \"$0 $*\" >> %s\nexit 0\n"


def run(argv, env=None, cwd=None):
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env=env,
                           cwd=cwd, timeout=10, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", "", 10.0
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def check_bin(bindir):
    bad = n = 0
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CK_", "BRIM_"))}
    scratch = tempfile.mkdtemp(prefix="brim-help-")
    try:
        bindir = os.path.abspath(bindir)
        for prog in sorted(os.listdir(bindir)):
            path = os.path.join(bindir, prog)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            n += 1
            for flag in ("--help", "-h"):
                rc, out, err, _ = run([path, flag], env=env, cwd=scratch)
                first = out.lstrip().splitlines()[0] if out.strip() else ""
                if rc != 0 or "usage:" not in first.lower():
                    bad += 1
                    print("%s %s: exit %s, first line %r, stderr %r" %
                          (prog, flag, rc, first[:80], err[:200]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("help_all: %d programs in %s, %d without a --help" % (n, bindir,
                                                                 bad))
    return 1 if bad or n == 0 else 0


def stub_tree(root, tmp):
    """TMP/deploy (a copy), TMP/build/bin of stub daemons, TMP/path (the
    PATH) and TMP/calls (what the stubs record)."""
    log = os.path.join(tmp, "calls")
    shutil.copytree(os.path.join(root, "deploy"), os.path.join(tmp, "deploy"))
    pathdir = os.path.join(tmp, "path")
    for d in (pathdir, os.path.join(tmp, "build", "bin")):
        os.makedirs(d, exist_ok=True)
    names = set(DAEMONS)
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        if os.path.isdir(d):
            names.update(os.listdir(d))
    for name in names:
        if "/" in name:
            continue
        real = shutil.which(name) if name in REAL else None
        for d in [pathdir] + ([os.path.join(tmp, "build", "bin")]
                              if name in DAEMONS else []):
            dst = os.path.join(d, name)
            if real is not None:
                os.symlink(real, dst)
            else:
                with open(dst, "w") as f:
                    f.write(STUB % log)
                os.chmod(dst, 0o755)
    return pathdir, log


def calls(log):
    if not os.path.exists(log):
        return ""
    with open(log) as f:
        text = f.read()
    os.unlink(log)
    return text


def check_scripts(root):
    tmp = tempfile.mkdtemp(prefix="brim-help-sh-")
    bad = n = 0
    try:
        pathdir, log = stub_tree(root, tmp)
        env = {"PATH": pathdir, "HOME": tmp, "TMPDIR": tmp}
        scripts = sorted(glob.glob(os.path.join(tmp, "deploy", "*.sh"))
                         + glob.glob(os.path.join(tmp, "deploy", "bench",
                                                  "*.sh")))
        for path in scripts:
            with open(path) as f:
                if not f.readline().startswith("#!"):
                    continue            # sourced, never run (lib.sh)
            n += 1
            rel = os.path.relpath(path, tmp)
            tries = [("--help", 0)]
            if os.path.basename(os.path.dirname(path)) == "bench":
                tries += [("--no-such-option", 2), ("abc", 2)]
            for arg, want in tries:
                rc, out, err, dt = run([path, arg], env=env)
                ran = calls(log)
                why = []
                if rc != want:
                    why.append("exit %s, want %d" % (rc, want))
                if want == 0 and not out.strip():
                    why.append("printed nothing")
                if want == 2 and len(err.strip().splitlines()) != 1:
                    why.append("stderr is not one line: %r" % err[:200])
                if ran:
                    why.append("ran %s" % ran.strip().splitlines()[:3])
                if why:
                    bad += 1
                    print("%s %s: %s" % (rel, arg, "; ".join(why)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("help_all: %d scripts, %d failures" % (n, bad))
    return 1 if bad or n == 0 else 0


def selftest(bindir, root):
    tmp = tempfile.mkdtemp(prefix="brim-help-self-")
    try:
        # A tree of the real scripts passes; plant a bench script that
        # starts a daemon and a node, as compare.sh once did on --help.
        shutil.copytree(os.path.join(root, "deploy"),
                        os.path.join(tmp, "deploy"))
        clean = check_scripts(tmp) == 0
        with open(os.path.join(tmp, "deploy", "bench", "planted.sh"),
                  "w") as f:
            f.write("#!/usr/bin/env bash\n# planted - no --help\n"
                    "root=$(cd \"$(dirname \"$0\")/../..\" && pwd)\n"
                    "taskset -c 0 \"$root/build/bin/brim-node\" "
                    "--standalone &\nsleep 1\necho done\n")
        os.chmod(os.path.join(tmp, "deploy", "bench", "planted.sh"), 0o755)
        planted_sh = check_scripts(tmp) == 1
        # A bin/ of a program that runs its work whatever it is given.
        bdir = os.path.join(tmp, "bin")
        os.makedirs(bdir)
        shutil.copy(os.path.join(bindir, "brim-node"), bdir)
        clean_bin = check_bin(bdir) == 0
        with open(os.path.join(bdir, "test_planted"), "w") as f:
            f.write("#!/bin/sh\necho '100%: Checks: 3, Failures: 0'\n")
        os.chmod(os.path.join(bdir, "test_planted"), 0o755)
        planted_bin = check_bin(bdir) == 1
        print("selftest: clean scripts %s, planted script %s, clean bin %s, "
              "planted binary %s" % (
                  "pass" if clean else "FAIL",
                  "fails" if planted_sh else "PASSES (wrong)",
                  "passes" if clean_bin else "FAILS",
                  "fails" if planted_bin else "PASSES (wrong)"))
        return 0 if clean and planted_sh and clean_bin and planted_bin else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    a = argv[1:]
    if len(a) == 2 and a[0] == "--bin":
        return check_bin(a[1])
    if len(a) == 2 and a[0] == "--scripts":
        return check_scripts(a[1])
    if len(a) == 3 and a[0] == "--selftest":
        return selftest(a[1], a[2])
    print(__doc__.strip().splitlines()[-4])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
