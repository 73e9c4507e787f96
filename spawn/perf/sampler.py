#!/usr/bin/env python3
# sampler.py DIR OUT: until no process for 5 s after one was seen, polls
# every 0.2 s the processes of this build's job (orted, prsh-guard and
# mpirun whose binary is under DIR; their children) and
# keeps, per pid, its comm, start time, last utime+stime, last seen time.
# Writes "pid comm start_s last_seen_s cpu_s user_s sys_s minflt majflt"
# lines to OUT (for fit.py). Outside bin/testbed run, as cpuacct.py.
import os, sys, time
d, out = sys.argv[1], sys.argv[2]
tick = os.sysconf('SC_CLK_TCK')
boot = time.time() - float(open('/proc/uptime').read().split()[0])
seen = {}
def scan():
    ps = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            st = open(f'/proc/{p}/stat').read()
        except OSError: continue
        comm = st[st.index('(')+1:st.rindex(')')]
        f = st[st.rindex(')')+2:].split()
        ps[int(p)] = (comm, int(f[1]), (int(f[11]) + int(f[12])) / tick, int(f[19]) / tick, int(f[11])/tick, int(f[12])/tick, int(f[7]), int(f[9]))
    return ps
idle_since = None; ever = False
while True:
    ps = scan(); now = time.time(); ours = set()
    for p, (comm, ppid, cpu, start, *_) in ps.items():
        if comm in ('orted', 'prsh-guard', 'mpirun'):
            try:
                if os.readlink(f'/proc/{p}/exe').startswith(d): ours.add(p)
            except OSError: pass
    for p, (comm, ppid, cpu, start, *_) in ps.items():
        if ppid in ours: ours.add(p)
    for p in ours:
        comm, ppid, cpu, start, ut, st, minf, majf = ps[p]
        seen[p] = (comm, start, now - boot, cpu, ut, st, minf, majf)
    if ours: ever = True; idle_since = None
    elif ever:
        idle_since = idle_since or now
        if now - idle_since > 5: break
    time.sleep(0.2)
with open(out, 'w') as f:
    for p, (comm, start, last, cpu, ut, st, minf, majf) in seen.items():
        print(p, comm, f'{start:.2f}', f'{last:.2f}', f'{cpu:.3f}', f'{ut:.3f}', f'{st:.3f}', minf, majf, file=f)
