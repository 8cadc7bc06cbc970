#!/usr/bin/env python3
"""Checks that every kernel of a launch manifest can be launched by CUDA:
1 <= grid.x <= 2^31 - 1, 1 <= grid.y, grid.z <= 65535, 1 <= each block dimension,
block.x * block.y * block.z <= 1024 (block.z <= 64). Prints `ok` or one line per
violation and exits 1.

Usage: check-launch-dims.py MANIFEST.json
"""
import json
import sys

m = json.load(open(sys.argv[1]))
bad = []
for k in m["kernels"]:
    gx, gy, gz = k["grid"]
    bx, by, bz = k["block"]
    if not (1 <= gx <= 2**31 - 1 and 1 <= gy <= 65535 and 1 <= gz <= 65535):
        bad.append(f"{k['name']}: grid {k['grid']} is outside CUDA's limits")
    if not (min(bx, by, bz) >= 1 and bz <= 64 and bx * by * bz <= 1024):
        bad.append(f"{k['name']}: block {k['block']} is outside CUDA's limits")
for b in bad:
    print("error: " + b)
print("ok" if not bad else "not launchable")
sys.exit(1 if bad else 0)
