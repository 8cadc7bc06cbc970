"""Validates a kopt-tune --agent-transcript against docs/agent-protocol.schema.json.

    check-agent-schema.py SCHEMA.json TRANSCRIPT [--replies]

Every line kopt sent ("> ...") must be a to_agent message; with --replies,
every JSON line the agent sent ("< ...") a from_agent message. Prints the
counts per message type; exits 1 at the first message that does not conform.
"""
import collections
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
replies = "--replies" in sys.argv[3:]


def validator(name):
    s = dict(schema)
    s.pop("oneOf")
    s["$ref"] = f"#/$defs/{name}"
    return jsonschema.Draft202012Validator(s)


to_agent, from_agent = validator("to_agent"), validator("from_agent")
counts = collections.Counter()
for number, line in enumerate(open(sys.argv[2]), 1):
    direction, _, text = line.rstrip("\n").partition(" ")
    if direction == ">" or (direction == "<" and replies):
        msg = json.loads(text)
        v = to_agent if direction == ">" else from_agent
        errors = sorted(v.iter_errors(msg), key=lambda e: e.path)
        if errors:
            print(f"{sys.argv[2]}:{number}: {msg.get('type')}: {errors[0].message}")
            sys.exit(1)
        counts[direction + msg["type"]] += 1
print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
