"""Run one ``jaxrod`` command line in this process while recording its XLA compilations
(benchmarks/compile.py starts it in a fresh subprocess).

Usage: ``python benchmarks/_compile_child.py RESULT.json jaxrod-arguments...``

jaxrod is imported from wherever ``PYTHONPATH`` points (the checkout being measured);
compile_log is loaded by file path from *this* checkout, so an older checkout without it can be
measured too. Writes ``{"rc", "wall_s", "compilations": [[name, seconds, cached], ...]}``.
"""

import importlib.util
import json
import os
import sys
import time

t0 = time.monotonic()
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("_bench_compile_log", os.path.join(_here, "..", "jaxrod", "compile_log.py"))
compile_log = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compile_log
_spec.loader.exec_module(compile_log)

result_path, argv = sys.argv[1], sys.argv[2:]
rc = 1
with compile_log.record(explain=False) as log:
    try:
        from jaxrod.cli import main

        rc = main(argv)
    finally:
        with open(result_path, "w") as f:
            json.dump({"rc": rc, "wall_s": time.monotonic() - t0,
                       "compilations": [[c.name, c.seconds, c.cached] for c in log.compilations]}, f)
sys.exit(rc)
