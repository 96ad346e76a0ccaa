"""Run ``ver run`` on each spec given, all in this one process, printing one result line per spec.

The corrupt-file tests start this script as a child process: a crash (a signal) then kills only
the child, and the test sees which spec it was on (the first without a result line). Lines of
other output (a native library writing to the terminal) are ignored by the reader.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from veritas_dsl.cli import main

PREFIX = "RESULT "

if __name__ == "__main__":
    for spec in sys.argv[1:]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", spec, "--timeout", "2"])
        print(
            PREFIX + json.dumps({"spec": spec, "code": code, "stderr": err.getvalue()}), flush=True
        )
