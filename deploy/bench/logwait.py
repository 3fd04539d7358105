#!/usr/bin/env python3
"""deploy/bench/logwait.py - wait, without starting any process, until a
log file holds a line containing each of PATTERN..., in order; print each
matching line as it is found.

  logwait.py [--timeout S] [--every MS] [--pid-file F] FILE PATTERN...

The benchmark scripts start it before their measured windows and let it
watch: on the 2-core VMs measured, a poll loop of `grep; sleep 0.2` in the
window (ten new processes a second) raised a 4-node cluster's client p99
from 0.25 ms to 2.4 ms (docs/performance.md, "What the scripts cost"),
while reading the file from one process costs nothing measurable.

Patterns are plain substrings. FILE may not exist yet (a node not yet
started). With --pid-file F, the process whose PID F holds (once F
exists) must stay alive until every pattern is seen: a node that exits
first (a port taken while it faulted its heap in) ends the wait at once,
with FILE's last line, instead of at the timeout. Exits 0 once every
pattern was seen, 1 at the timeout (default 900 s), 3 when the process
exited first, 2 on bad usage.
"""
import os
import sys
import time


def alive(pid_file):
    """False when PID_FILE names a process that no longer runs (a zombie
    counts as gone); True while it runs or the file is not there yet."""
    try:
        pid = int(open(pid_file).read().strip())
    except (OSError, ValueError):
        return True
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def main(argv):
    timeout_s, every_ms, pid_file, args = 900.0, 50.0, None, argv[1:]
    while args and args[0].startswith('--'):
        opt = args.pop(0)
        if opt in ('-h', '--help'):
            print(__doc__.strip())
            return 0
        if opt == '--pid-file' and args:
            pid_file = args.pop(0)
            continue
        if opt not in ('--timeout', '--every') or not args:
            print('logwait.py: bad option %s (try --help)' % opt,
                  file=sys.stderr)
            return 2
        try:
            value = float(args.pop(0))
        except ValueError:
            print('logwait.py: %s needs a number' % opt, file=sys.stderr)
            return 2
        if value <= 0:
            print('logwait.py: %s must be above 0' % opt, file=sys.stderr)
            return 2
        if opt == '--timeout':
            timeout_s = value
        else:
            every_ms = value
    if len(args) < 2:
        print('usage: logwait.py [--timeout S] [--every MS] FILE PATTERN...',
              file=sys.stderr)
        return 2
    path, patterns = args[0], args[1:]
    deadline = time.monotonic() + timeout_s
    pos, partial, last = 0, '', ''
    while True:
        gone = pid_file is not None and not alive(pid_file)
        try:
            with open(path, errors='replace') as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
        except FileNotFoundError:
            chunk = ''
        lines = (partial + chunk).split('\n')
        partial = lines.pop()  # an unfinished line, kept for the next read
        for line in lines:
            last = line or last
            if patterns and patterns[0] in line:
                print(line, flush=True)
                patterns.pop(0)
        if not patterns:
            return 0
        if gone:
            print('logwait.py: the process of %s exited before %s had "%s";'
                  ' its last line: %s' % (pid_file, path, patterns[0],
                                          (partial or last).strip()),
                  file=sys.stderr)
            return 3
        if time.monotonic() >= deadline:
            print('logwait.py: %s: no line with "%s" within %g s'
                  % (path, patterns[0], timeout_s), file=sys.stderr)
            return 1
        time.sleep(every_ms / 1000.0)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
