"""Checks kopt-tune --json output (and a trial log) for kopt-tune-external.test.

    check-external.py TABLE.json EXPR...

Each EXPR is a Python expression over `j` (the JSON), `a` (j["agent"]),
`k` (j["kernels"]) and `trials` (the sum of the kernels' trials); every one
must hold. Prints the failing expression and the JSON otherwise.
"""
import json
import sys

j = json.load(open(sys.argv[1]))
a = j.get("agent", {})
k = j.get("kernels", [])
trials = sum(r["trials"] for r in k)
for expr in sys.argv[2:]:
    if not eval(expr):
        print(f"check failed: {expr}\n{json.dumps(j, indent=1)}")
        sys.exit(1)
print("ok")
