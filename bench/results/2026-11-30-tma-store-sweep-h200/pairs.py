#!/usr/bin/env python3
"""Pairs the kernels of a TMA-store sweep (bench/run_sweep.py sweep.json) that differ
only in tma_store and prints time without / time with per pair and their geomean.
Usage: python3 pairs.py <(zcat sweep.json.gz)"""
import json, math, sys
d=json.load(open(sys.argv[1]))
def key(s):
    s=dict(s); s.pop('tma_store',None); s.pop('num_warps',None); return json.dumps(s,sort_keys=True)
def short(s):
    return f"{s['block_m']}x{s['block_n']}x{s['block_k']} st{s['stages']} sk{s['split_k']} {s['copy']}{' P' if s['persistent'] else ''}{' WS' if s['warp_specialize'] else ''}"
allr=[]; bestr=[]
for p in d['problems']:
    ks=[k for k in p['kernels'] if k.get('correct')]
    if not ks: continue
    by={}
    for k in ks: by.setdefault(key(k['schedule']),{})[k['schedule'].get('tma_store',False)]=k
    boff=max((k['ratio_to_cublas'] for k in ks if not k['schedule'].get('tma_store')), default=None)
    bon=max((k['ratio_to_cublas'] for k in ks if k['schedule'].get('tma_store')), default=None)
    line=f"{p['id'][:44]:44s} best off {boff:.3f}" + (f" on {bon:.3f}" if bon else "")
    rs=[]
    for kk,v in by.items():
        if True in v and False in v:
            r=v[False]['ms']/v[True]['ms']; allr.append(r); rs.append(f"{short(v[False]['schedule'])}: {r:.3f}")
    if bon: bestr.append(bon/boff)
    print(line); 
    for x in rs: print("     speedup on/off", x)
g=lambda a: math.exp(sum(map(math.log,a))/len(a))
print("geomean speedup (off time / on time) over", len(allr), "pairs:", round(g(allr),4), "min", round(min(allr),3), "max", round(max(allr),3))
print("geomean best_on/best_off over", len(bestr), round(g(bestr),4))
