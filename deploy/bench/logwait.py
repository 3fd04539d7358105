#!/usr/bin/env python3
"""deploy/bench/logwait.py - wait, without starting any process, until a
log file has held each of PATTERN..., in order; print each line that
completes a pattern as it is found.

  logwait.py [--timeout S] [--every MS] [--pid-file F] FILE PATTERN...

The benchmark scripts start it before their measured windows and let it
watch: on the 2-core VMs measured, a poll loop of `grep; sleep 0.2` in the
window (ten new processes a second) raised a 4-node cluster's client p99
from 0.25 ms to 2.4 ms (docs/performance.md, "The machine's own stalls,
and what the scripts cost"), while reading the file from one process
costs nothing measurable.

Patterns are plain substrings, found in order: the first in some line,
the next in that same line after it or in a later line, and so on. A last
line not yet ended by a newline counts too. FILE may not exist yet (a
node not yet started). With --pid-file F, the process whose PID F holds
(once F exists) must stay alive until every pattern is seen: a node that
exits first (a port taken while it faulted its heap in) ends the wait at
once, with FILE's last line, instead of at the timeout. --timeout S is
the longest wait in seconds (default 900), --every MS how often FILE is
read (default 50 ms).

Exits 0 once every pattern was seen, 1 at the timeout, 3 when the
process exited first, 2 on bad usage or when FILE cannot be read (a
directory, no permission).
"""
import math
import sys
import time

USAGE = ('usage: logwait.py [--timeout S] [--every MS] [--pid-file F] '
         'FILE PATTERN...')


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


def bad(msg):
    print('logwait.py: %s (try --help)' % msg, file=sys.stderr)
    return 2


def find(line, patterns):
    """Pop from PATTERNS each one found in LINE, in order (the next after
    where the last ended); True when any was."""
    at, found = 0, False
    while patterns:
        i = line.find(patterns[0], at)
        if i < 0:
            break
        at = i + len(patterns[0])
        patterns.pop(0)
        found = True
    return found


def main(argv):
    timeout_s, every_ms, pid_file, args = 900.0, 50.0, None, argv[1:]
    while args and args[0].startswith('-') and args[0] != '-':
        opt = args.pop(0)
        if opt in ('-h', '--help'):
            print(__doc__.strip())
            return 0
        if opt not in ('--timeout', '--every', '--pid-file'):
            return bad('unknown option %s' % opt)
        if not args:
            return bad('%s needs a value' % opt)
        value = args.pop(0)
        if opt == '--pid-file':
            pid_file = value
            continue
        try:
            number = float(value)
        except ValueError:
            return bad('%s needs a number, not "%s"' % (opt, value))
        if not math.isfinite(number) or number <= 0:
            return bad('%s must be a finite number above 0, not "%s"'
                       % (opt, value))
        if opt == '--timeout':
            timeout_s = number
        else:
            every_ms = number
    if len(args) < 2:
        print(USAGE, file=sys.stderr)
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
        except OSError as e:
            print('logwait.py: %s: %s' % (path, e.strerror), file=sys.stderr)
            return 2
        lines = (partial + chunk).split('\n')
        partial = lines.pop()  # an unfinished line, kept for the next read
        for line in lines:
            last = line or last
            if find(line, patterns):
                print(line, flush=True)
        if patterns and partial and find(partial, patterns):
            # An unfinished last line held a pattern: what follows on it
            # is read as a line of its own.
            print(partial, flush=True)
            partial = ''
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
