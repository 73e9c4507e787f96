#!/usr/bin/env python3
# cpuacct.py DIR SECONDS: CPU (ns, schedstat of every thread) that the
# processes of a running job take over SECONDS, by command name: every
# orted and mpirun whose binary lies in DIR, the orteds' parent shell and
# agent, and all their descendants. Run it outside bin/testbed run (whose
# command sees its own /proc).
import os, sys, time, collections
d, secs = sys.argv[1], float(sys.argv[2])
def procs():
    out = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            st = open(f'/proc/{p}/stat').read()
            comm = st[st.index('(')+1:st.rindex(')')]
            ppid = int(st[st.rindex(')')+2:].split()[1])
            out[int(p)] = (comm, ppid)
        except OSError: pass
    return out
def cpu(p):
    t = 0
    try:
        for tid in os.listdir(f'/proc/{p}/task'):
            t += int(open(f'/proc/{p}/task/{tid}/schedstat').read().split()[0])
    except OSError: return None
    return t
def ours():
    ps = procs()
    kids = collections.defaultdict(list)
    for p, (c, pp) in ps.items(): kids[pp].append(p)
    sel = set()
    for p, (c, pp) in ps.items():
        if c != 'orted': continue
        try:
            if not os.readlink(f'/proc/{p}/exe').startswith(d): continue
        except OSError: continue
        q = pp
        for _ in range(2):
            if q in ps and ps[q][0] in ('sh', 'testbed-agent', 'mpirun'): sel.add(q); q = ps[q][1]
        stack = [p]
        while stack:
            x = stack.pop(); sel.add(x); stack += kids[x]
    for p, (c, pp) in ps.items():
        try:
            if c == 'mpirun' and os.readlink(f'/proc/{p}/exe').startswith(d): sel.add(p)
        except OSError: pass
    return {p: ps[p][0] for p in sel}
a = ours(); c0 = {p: cpu(p) for p in a}
time.sleep(secs)
c1 = {p: cpu(p) for p in a}
by = collections.defaultdict(lambda: [0, 0])
for p, comm in a.items():
    if c0[p] is None or c1[p] is None: continue
    by[comm][0] += 1; by[comm][1] += c1[p] - c0[p]
tot = 0
for comm, (n, ns) in sorted(by.items()):
    tot += ns
    print(f'{comm:15s} {n:4d} procs {ns/1e6:9.1f} ms  {ns/1e6/n/secs:7.3f} ms/s each')
print(f'total {tot/1e6:.1f} ms over {secs}s; load {open("/proc/loadavg").read().split()[0]}')
