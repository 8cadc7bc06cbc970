#!/usr/bin/env python3
"""Runs a command whose arguments hold bytes lit's RUN lines cannot spell.

Usage: run-with-bytes.py DIR COMMAND [ARG]...

Every `@XX@` (two hex digits) in an argument becomes the byte 0xXX, so that e.g.
`output=out-@FF@.ptx` names a file whose name is not valid UTF-8. DIR is the
working directory. Exits with the command's status.
"""
import os
import re
import subprocess
import sys


def expand(arg):
    return re.sub(rb"@([0-9A-Fa-f]{2})@", lambda m: bytes([int(m.group(1), 16)]),
                  os.fsencode(arg))


def main():
    cwd, cmd = sys.argv[1], [expand(a) for a in sys.argv[2:]]
    return subprocess.run(cmd, cwd=cwd).returncode


if __name__ == "__main__":
    sys.exit(main())
