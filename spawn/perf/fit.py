#!/usr/bin/env python3
# fit.py FILE: per kind, CPU against lifetime: least squares cpu = a + c*life.
import sys, collections
rows = [l.split() for l in open(sys.argv[1])]
by = collections.defaultdict(list)
ext = collections.defaultdict(lambda: [0,0,0,0])
for pid, comm, start, last, cpu, ut, st, minf, majf in rows:
    by[comm].append((float(last) - float(start), float(cpu)))
    e = ext[comm]; e[0] += float(ut); e[1] += float(st); e[2] += int(minf); e[3] += int(majf)
t0 = min(float(r[2]) for r in rows); t1 = max(float(r[3]) for r in rows)
print(f'span {t1-t0:.1f}s')
for comm, xs in sorted(by.items()):
    n = len(xs); mx = sum(x for x, _ in xs) / n; my = sum(y for _, y in xs) / n
    sxx = sum((x - mx) ** 2 for x, _ in xs); sxy = sum((x - mx) * (y - my) for x, y in xs)
    c = sxy / sxx if sxx > 0 else 0; a = my - c * mx
    print(f'{comm:12s} n={n:4d} cpu mean {my*1000:7.1f} ms total {my*n:7.2f} s  life mean {mx:6.1f} s  fit: {a*1000:6.1f} ms + {c*1000:5.2f} ms/s x life')
for comm, (ut, st, minf, majf) in sorted(ext.items()):
    n = len(by[comm]); print(f'{comm:12s} user {ut/n*1000:6.1f} ms sys {st/n*1000:6.1f} ms minflt {minf/n:7.0f} majflt {majf/n:5.1f} per process')
