#!/usr/bin/env python3
"""deploy/bench/migration_window.py - the figures of one run of
deploy/bench/migration.sh, from its directory: the migration window (node4's
commit to its last incoming partition complete, from node4's log), MB moved
and MB/s over it, and client p50/p99 over it against a window of the same
length just before the join (brim-bench --latency-log).

  migration_window.py RUN_DIR RUN      one line of figures for the run
  migration_window.py --summary FILE   the median run of FILE's lines
"""
import datetime
import re
import sys

LINE = re.compile(r'^(\S+) .*every incoming partition is complete: (\d+) keys, '
                  r'(\d+) bytes in (\d+) ms')


def pct(values, q):
    if not values:
        return float('nan')
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] / 1000.0


def run_figures(run_dir, run):
    end_ns = keys = nbytes = ms = None
    with open(run_dir + '/node4.log') as f:
        for line in f:
            m = LINE.match(line)
            if m:
                ts = datetime.datetime.strptime(m.group(1), '%Y-%m-%dT%H:%M:%S.%fZ')
                ts = ts.replace(tzinfo=datetime.timezone.utc)
                end_ns = int(ts.timestamp() * 1000) * 1000000
                keys, nbytes, ms = (int(m.group(i)) for i in (2, 3, 4))
                break
    if end_ns is None:
        sys.exit('%s: no "every incoming partition is complete" line in '
                 'node4.log' % run_dir)
    join_ns = int(open(run_dir + '/join_ns').read())
    win = max(ms, 1) * 1000000
    start_ns = end_ns - win
    during, before = [], []
    with open(run_dir + '/latency.log') as f:
        for line in f:
            if not line[:1].isdigit():
                continue
            t, lat = line.split()
            t = int(t)
            if start_ns <= t < end_ns:
                during.append(int(lat))
            elif join_ns - win <= t < join_ns:
                before.append(int(lat))
    b99, d99 = pct(before, 0.99), pct(during, 0.99)
    return ('run %s: %.0f MB (%d keys) in %d ms: %.1f MB/s; p50/p99 before '
            '%.0f/%.0f us, during %.0f/%.0f us (%d/%d replies): p99 %.2fx'
            % (run, nbytes / 1e6, keys, ms, nbytes / 1e3 / max(ms, 1),
               pct(before, 0.5), b99, pct(during, 0.5), d99, len(before),
               len(during), d99 / b99 if b99 > 0 else float('nan')))


def summary(path):
    rows = []
    for line in open(path):
        m = re.search(r': ([\d.]+) MB/s;.*: p99 ([\d.]+)x', line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2)), line.strip()))
    if not rows:
        sys.exit('%s: no runs' % path)
    rates = sorted(r[0] for r in rows)
    ratios = sorted(r[1] for r in rows)
    print('%d runs: MB/s median %.1f [min %.1f, max %.1f]; p99 during/before '
          'median %.2fx [min %.2f, max %.2f]'
          % (len(rows), rates[len(rates) // 2], rates[0], rates[-1],
             ratios[len(ratios) // 2], ratios[0], ratios[-1]))


def main(argv):
    if len(argv) == 2 and argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0
    if len(argv) == 3 and argv[1] == '--summary':
        summary(argv[2])
        return 0
    if len(argv) != 3:
        sys.stderr.write('migration_window.py: usage: RUN_DIR RUN | --summary '
                         'FILE; see --help\n')
        return 2
    print(run_figures(argv[1], argv[2]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
