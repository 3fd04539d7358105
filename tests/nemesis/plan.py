"""plan.py - every random decision of one nemesis run, made up front.

One seed gives one Plan: the load profile, the data set's size, each
node's migration pace and weight, the sequence of membership changes and
the faults injected during each of them (kind, victim, delay, length).
Nothing here looks at the cluster: the run's observations (timings,
partitions in flight) never feed back into a decision, so `--seed N`
replays the same decisions, and `--dry-run` prints them without starting
anything.

Migration length is the point of the sizing (a fault only tests a
migration it strikes): a join into N+1 nodes moves D/(N+1) bytes, sent
by the N old owners in parallel, each at most --pace-mb-per-s; a leave
has one sender, the leaver, which sends its share of D. The data size D
is chosen so that the shortest change (a join into MAX_MEMBERS nodes)
still streams for --min-migration-s.
"""

import random

# Fault kinds a run may inject while a migration runs (the menu), and
# "slow", a node configuration (a node paced at --slow-mb-per-s with a
# larger weight, so that its streams last over a minute).
EVENT_FAULTS = ("coord_kill", "coord_pause", "coord_pause_long",
                "pause_receiver", "pause_sender", "tcp_reset", "bigvals",
                "back_to_back", "node_kill")
CONFIG_FAULTS = ("slow",)
ALL_FAULTS = EVENT_FAULTS + CONFIG_FAULTS
DEFAULT_OFF = ("node_kill",)

# Bench profiles: value sizes (the largest one at the 1 MiB limit), key
# space and a bounded rate. "big" keeps values near the limit in the
# partitions that stream.
PROFILES = {
    "small": dict(value_size="100-4096", keys=4000, rate=500,
                  get_ratio=0.6, mean_value=2098),
    "mixed": dict(value_size="100-131072", keys=1200, rate=300,
                  get_ratio=0.6, mean_value=65586),
    "big": dict(value_size="262144-1048576", keys=120, rate=40,
                get_ratio=0.6, mean_value=655360),
}

MB = 1000 * 1000


def parse_faults(spec, node_kill):
    """The enabled fault kinds from SPEC ("all", or a comma list of kinds,
    each optionally "-kind" to remove it from "all"). Raises ValueError
    naming a bad kind."""
    enabled = [k for k in ALL_FAULTS if k not in DEFAULT_OFF]
    if node_kill:
        enabled.append("node_kill")
    if spec in (None, "", "all"):
        return enabled
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if all(s.startswith("-") for s in items):
        out = list(enabled)
    else:
        out = []
    for s in items:
        name = s.lstrip("-")
        if name not in ALL_FAULTS:
            raise ValueError("unknown fault kind %r (kinds: %s)"
                             % (name, ", ".join(ALL_FAULTS)))
        if s.startswith("-"):
            if name in out:
                out.remove(name)
        elif name not in out:
            out.append(name)
    if "node_kill" in out and not node_kill:
        raise ValueError("fault kind node_kill needs --node-kill")
    return out


class NodeSpec:
    """A node the run starts: name, weight and pace (MB/s)."""

    def __init__(self, name, weight, pace, slow=False):
        self.name = name
        self.weight = weight
        self.pace = pace
        self.slow = slow

    def describe(self):
        return "%s(w=%s,%dMB/s%s)" % (self.name, _w(self.weight), self.pace,
                                      ",slow" if self.slow else "")


class Fault:
    """One fault of a step: KIND, its victim (a node name, or None), the
    delay after the step's commit, and kind-specific parameters."""

    def __init__(self, kind, delay_s, victim=None, **params):
        self.kind = kind
        self.delay_s = delay_s
        self.victim = victim
        self.params = params

    def describe(self):
        ps = " ".join("%s=%s" % (k, _fmt(v)) for k, v in
                      sorted(self.params.items()))
        return "%s@+%.1fs%s%s" % (self.kind, self.delay_s,
                                  " " + self.victim if self.victim else "",
                                  " " + ps if ps else "")


class Step:
    """One membership change: a join of NODE (a NodeSpec) or a leave of
    NAME by METHOD ("ctl": brimctl leave, "term": SIGTERM), the faults
    while its migration runs, and whether the next change is asked for
    back to back (without waiting for this migration)."""

    def __init__(self, index, kind, name, node=None, method=None):
        self.index = index
        self.kind = kind
        self.name = name
        self.node = node
        self.method = method
        self.faults = []
        self.back_to_back = False
        self.members_before = []
        self.members_after = []
        self.est_s = 0.0

    def describe(self):
        what = ("join %s" % self.node.describe() if self.kind == "join"
                else "leave %s by %s" % (self.name, self.method))
        s = "step %d: %s; members %d->%d, est. migration %.0f s" % (
            self.index, what, len(self.members_before),
            len(self.members_after), self.est_s)
        if self.back_to_back:
            s += "; next change back to back"
        return s


class Plan:
    """Everything a run does, decided from the seed alone."""

    def __init__(self, seed):
        self.seed = seed
        self.profile = None
        self.bench = None
        self.nodes = {}             # name -> NodeSpec (every node ever)
        self.initial = []           # names of the first members
        self.steps = []
        self.data_bytes = 0         # imported records, value bytes
        self.record_sizes = []      # value size of each imported record
        self.memory_mb = 0
        self.est_total_s = 0.0

    def lines(self):
        out = ["seed %d: profile %s (bench values %s, %d keys, %d ops/s), "
               "import %d records, %.1f MB; memory %d MiB per node"
               % (self.seed, self.profile, self.bench["value_size"],
                  self.bench["keys"], self.bench["rate"],
                  len(self.record_sizes), self.data_bytes / MB,
                  self.memory_mb),
               "initial members: " + ", ".join(
                   self.nodes[n].describe() for n in self.initial)]
        for st in self.steps:
            out.append(st.describe())
            for f in st.faults:
                out.append("    fault " + f.describe())
        out.append("estimated time of the changes: %.0f s"
                   % self.est_total_s)
        return out


def _w(w):
    return ("%g" % w)


def _fmt(v):
    return "%.2f" % v if isinstance(v, float) else str(v)


def _shares(nodes, members):
    tot = sum(nodes[m].weight for m in members)
    return {m: nodes[m].weight / tot for m in members}


def estimate_s(nodes, before, after, data):
    """Seconds the change BEFORE -> AFTER (member name lists) streams:
    each sender's bytes over its pace, the slowest sender wins. Partitions
    move in proportion to weight (the ring), which is close enough for a
    plan."""
    sb, sa = _shares(nodes, before), _shares(nodes, after)
    worst = 0.0
    for m in before:
        lose = max(0.0, sb[m] - sa.get(m, 0.0))
        worst = max(worst, lose * data / (nodes[m].pace * MB))
    return worst


class Planner:
    """Builds a Plan from ARGS (the parsed command line)."""

    def __init__(self, args):
        self.a = args
        self.r = random.Random(args.seed)
        self.faults = args.fault_kinds

    def build(self):
        a, r = self.a, self.r
        p = Plan(a.seed)
        p.profile = a.values if a.values != "random" else r.choices(
            ["small", "mixed", "big"], weights=[4, 3, 3])[0]
        p.bench = dict(PROFILES[p.profile])
        bench_bytes = p.bench["keys"] * p.bench["mean_value"]
        # D so that a join into MAX_MEMBERS nodes streams min_migration_s
        # at the normal pace: each of the n-1 senders gives D/(n(n-1)).
        n = a.max_members
        total = a.min_migration_s * a.pace_mb_per_s * MB * n * (n - 1)
        total *= 1.1
        p.data_bytes = 0
        self._records(p, max(total - bench_bytes, 4 * MB))
        data = p.data_bytes + bench_bytes
        # No node may evict (the bench fails on an eviction, and a lost
        # key would then prove nothing): room for 3/4 of all data on any
        # node, plus tables, buffers and the bigvals records.
        p.memory_mb = int(data * 0.75 / (1 << 20)) + 128

        want_slow = "slow" in self.faults and r.random() < a.slow_prob
        nxt = 1
        for _ in range(a.nodes):
            name = "node%d" % nxt
            nxt += 1
            p.nodes[name] = NodeSpec(name, 1.0, a.pace_mb_per_s)
            p.initial.append(name)
        members = list(p.initial)
        slow_name, slow_leave_at = None, None
        slow_join_at = r.randrange(0, max(1, a.changes - 2)) \
            if want_slow else None
        for i in range(a.changes):
            st = None
            if slow_leave_at is not None and i == slow_leave_at \
                    and slow_name in members and len(members) > a.min_members:
                st = Step(i, "leave", slow_name,
                          method=r.choice(["ctl", "term"]))
            elif i == slow_join_at and len(members) < a.max_members:
                name = "node%d" % nxt
                nxt += 1
                spec = NodeSpec(name, a.slow_weight, a.slow_mb_per_s, True)
                p.nodes[name] = spec
                st = Step(i, "join", name, node=spec)
                slow_name = name
                slow_leave_at = i + r.choice([1, 2])
            elif i == slow_join_at:
                slow_join_at += 1       # full now: try again next step
            if st is None:
                st = self._change(i, members, p, nxt, slow_name)
                if st.kind == "join":
                    nxt += 1
            st.members_before = list(members)
            if st.kind == "join":
                members.append(st.name)
            else:
                members.remove(st.name)
            st.members_after = list(members)
            st.est_s = estimate_s(p.nodes, st.members_before,
                                  st.members_after, data)
            self._faults(st, p, members, data)
            # A node kill takes its victim out of the membership too.
            for f in st.faults:
                if f.kind == "node_kill" and f.victim in members:
                    members.remove(f.victim)
                    st.members_after = list(members)
            p.steps.append(st)
        # Back to back: the flag sits on the earlier step; a slow leave
        # is followed at once more often (a change that must wait longer
        # than any fixed bound).
        for st in p.steps[:-1]:
            if "back_to_back" not in self.faults:
                break
            prob = a.b2b_prob * (2 if st.name == slow_name
                                 and st.kind == "leave" else 1)
            st.back_to_back = r.random() < prob
        p.est_total_s = sum(s.est_s for s in p.steps)
        return p

    def _records(self, p, target):
        """Value sizes of the imported records, about TARGET bytes: most
        of 500 B to 4 KB, a quarter to 32 KB, one in twenty to 200 KB."""
        r = self.r
        tot = 0
        while tot < target:
            u = r.random()
            if u < 0.70:
                s = r.randint(500, 4000)
            elif u < 0.95:
                s = r.randint(4001, 32000)
            else:
                s = r.randint(32001, 200000)
            p.record_sizes.append(s)
            tot += s
        p.data_bytes = tot

    def _change(self, i, members, p, nxt, slow_name):
        a, r = self.a, self.r
        if len(members) <= a.min_members:
            kind = "join"
        elif len(members) >= a.max_members:
            kind = "leave"
        else:
            kind = r.choice(["join", "leave"])
        if kind == "join":
            name = "node%d" % nxt
            spec = NodeSpec(name, 1.0, a.pace_mb_per_s)
            p.nodes[name] = spec
            return Step(i, "join", name, node=spec)
        # The slow node leaves at its own step, not by chance.
        cands = sorted(m for m in members if m != slow_name) or \
            sorted(members)
        return Step(i, "leave", r.choice(cands),
                    method=r.choice(["ctl", "term"]))

    def _faults(self, st, p, members_after, data):
        a, r = self.a, self.r
        kinds = [k for k in self.faults if k in EVENT_FAULTS
                 and k != "back_to_back"]
        if not kinds:
            return
        nf = r.choice(a.faults_per_change)
        # Strike while the stream runs: within the first 60% of its
        # estimated length, and no later than 4 s after the commit.
        span = max(0.5, min(4.0, 0.6 * st.est_s))
        delays = sorted(r.uniform(0.3, span) for _ in range(nf))
        killed = False
        for d in delays:
            kind = r.choice(kinds)
            f = self._fault(kind, d, st, members_after, killed)
            if f is None:
                continue
            if f.kind == "node_kill":
                killed = True
            st.faults.append(f)

    def _fault(self, kind, d, st, members_after, killed):
        a, r = self.a, self.r
        da = a.dead_after_ms / 1000.0
        receivers = [st.name] if st.kind == "join" else \
            sorted(members_after)
        senders = sorted(m for m in st.members_before if m != st.name) \
            if st.kind == "join" else [st.name]
        if kind == "coord_kill":
            return Fault(kind, d, down_s=r.uniform(0.1, 2.0))
        if kind == "coord_pause":
            # Shorter than dead-after, less a heartbeat and a margin.
            return Fault(kind, d, pause_s=r.uniform(0.3, max(0.4, da - 1.2)))
        if kind == "coord_pause_long":
            # Longer than dead-after: DESIGN.md 13, the coordinator must
            # not count its own pause against the nodes.
            return Fault(kind, d, pause_s=r.uniform(da + 0.5, 2 * da))
        if kind in ("pause_receiver", "pause_sender"):
            pool = receivers if kind == "pause_receiver" else senders
            if not pool:
                return None
            return Fault(kind, d, r.choice(pool),
                         pause_s=r.uniform(0.3, max(0.4, da - 1.2)))
        if kind == "tcp_reset":
            scope = r.choice(["all", "receiver", "sender"])
            pool = {"all": [None], "receiver": receivers,
                    "sender": senders}[scope]
            return Fault(kind, d, r.choice(pool) if pool else None,
                         scope=scope)
        if kind == "bigvals":
            return Fault(kind, d, count=r.randint(2, 6))
        if kind == "node_kill":
            # Never below min_members, one kill per change at most, never
            # the slow node's leave (that one must be graceful).
            if killed or len(members_after) <= a.min_members:
                return None
            pool = sorted(set(receivers) | set(senders))
            pool = [m for m in pool if m in members_after]
            if not pool:
                return None
            return Fault(kind, d, r.choice(pool))
        return None
