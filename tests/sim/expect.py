#!/usr/bin/env python3
"""Run one command and check its exit status, stdout and stderr.

usage: expect.py [--exit N] [--stdin FILE] [--stdout FILE]
                 [--stdout-empty] [--stdout-re REGEX]...
                 [--stderr-re REGEX]...
                 [--same-stdout-with ARGS] -- COMMAND [ARG...]

--exit N              the exit status COMMAND must return (default 0)
--stdin FILE          feed FILE to COMMAND's stdin (else an empty stdin)
--stdout FILE         stdout must equal FILE's bytes exactly
--stdout-empty        stdout must be empty (a refused input places nothing)
--stdout-re REGEX     stdout must match REGEX (re.search; may be repeated)
--stderr-re REGEX     stderr must match REGEX (re.search; may be repeated)
--same-stdout-with A  run COMMAND's program again with the space-separated
                      arguments A; both stdouts must be identical

Used by tests/sim.cmake for brim-sim's process-level tests (exact exit
codes, which CTest's WILL_FAIL cannot state). Prints what differs.
"""

import re
import subprocess
import sys


def parse(argv):
    opts = {"exit": 0, "stdin": None, "stdout": None, "empty": False,
            "stdout_re": [], "stderr_re": [], "same": None}
    i = 1
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a == "--stdout-empty":
            opts["empty"] = True
            i += 1
            continue
        if i + 1 >= len(argv):
            raise SystemExit("expect.py: %s needs a value" % a)
        v = argv[i + 1]
        if a == "--exit":
            opts["exit"] = int(v)
        elif a == "--stdin":
            opts["stdin"] = v
        elif a == "--stdout":
            opts["stdout"] = v
        elif a == "--stdout-re":
            opts["stdout_re"].append(v)
        elif a == "--stderr-re":
            opts["stderr_re"].append(v)
        elif a == "--same-stdout-with":
            opts["same"] = v.split()
        else:
            raise SystemExit("expect.py: unknown flag %s" % a)
        i += 2
    if i >= len(argv) - 1:
        raise SystemExit("expect.py: no command after --")
    return opts, argv[i + 1:]


def run(cmd, stdin_file):
    if stdin_file is not None:
        with open(stdin_file, "rb") as f:
            return subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def main(argv):
    opts, cmd = parse(argv)
    p = run(cmd, opts["stdin"])
    err = p.stderr.decode("utf-8", "replace")
    bad = []
    if p.returncode != opts["exit"]:
        bad.append("exit status %d, expected %d" %
                   (p.returncode, opts["exit"]))
    if opts["stdout"] is not None:
        with open(opts["stdout"], "rb") as f:
            want = f.read()
        if p.stdout != want:
            bad.append("stdout differs from %s:\n--- got\n%s--- expected\n%s"
                       % (opts["stdout"], p.stdout.decode("utf-8", "replace"),
                          want.decode("utf-8", "replace")))
    if opts["empty"] and p.stdout != b"":
        bad.append("stdout should be empty, got:\n%s" %
                   p.stdout.decode("utf-8", "replace"))
    out = p.stdout.decode("utf-8", "replace")
    for rx in opts["stdout_re"]:
        if re.search(rx, out) is None:
            bad.append("stdout does not match /%s/:\n%s" % (rx, out))
    for rx in opts["stderr_re"]:
        if re.search(rx, err) is None:
            bad.append("stderr does not match /%s/" % rx)
    if opts["same"] is not None:
        q = run([cmd[0]] + opts["same"], opts["stdin"])
        if q.returncode != p.returncode or q.stdout != p.stdout:
            bad.append("stdout differs with arguments %s" %
                       " ".join(opts["same"]))
    if bad:
        print("command: %s" % " ".join(cmd))
        print("stderr:\n%s" % err)
        for b in bad:
            print("FAIL " + b)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
