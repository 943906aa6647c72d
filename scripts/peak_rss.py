"""peak_rss.py CMD [ARGS...]: runs CMD and prints its own peak RSS as the last
line of stdout, {"maxrss_kb": N}; exits with CMD's exit code.

Linux keeps a process's high-water RSS across exec, so a command started
from a large process (a benchmark holding a trained tokenizer, pytest)
would count that process's memory too: run this with `python -S`, a small
interpreter, and the command is forked from it. Its own rusage is read
(wait4), not RUSAGE_CHILDREN's maximum over every child so far. Used by
bench/memory_bench.py and tests/python/test_build_memory.py.
"""
import json
import os
import sys

pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"maxrss_kb": usage.ru_maxrss}))
sys.exit(os.waitstatus_to_exitcode(status))
