#!/usr/bin/env python3
"""Writes every problem of the benchmark suite as a kopt .mlir file.

    bench/gen_mlir.py OUT_DIR [--suite bench/suite.json] [--only NAME]...

Each problem of bench/suite.json becomes OUT_DIR/<name>.mlir: one function
@<name>(inputs...) -> (outputs...) whose body is the problem's graph as kopt ops
(docs/ops.md), one op per graph node. kopt compiles it into one kernel per op
(docs/compiler.md). Problems kopt is known not to support are written too (their
compile error is part of the report). Prints the paths written.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kopt_suite as ks  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--suite", default=ks.SUITE_PATH)
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    args = ap.parse_args()
    try:
        suite = ks.load_suite(args.suite)
        problems = ks.select(suite, args.only)
    except ks.SuiteError as e:
        print(f"gen_mlir: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    for p in problems:
        path = os.path.join(args.out_dir, p["name"] + ".mlir")
        with open(path, "w") as f:
            f.write(ks.mlir_text(p))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
