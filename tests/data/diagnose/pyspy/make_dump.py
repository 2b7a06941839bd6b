"""Make `four-ranks.txt`: real `py-spy dump` output of four processes, three waiting in a
barrier (standing in for the collective their peers wait in) and one blocked on an empty
data queue (a stuck DataLoader). The processes are staged; the dump is py-spy's own.

Run (needs py-spy, e.g. `pip install py-spy`, and permission to ptrace the children):
`python tests/data/diagnose/pyspy/make_dump.py > tests/data/diagnose/pyspy/four-ranks.txt`
"""

import multiprocessing as mp
import queue
import subprocess
import sys
import time


def all_reduce(barrier) -> None:
    barrier.wait()  # never released: the fourth process does not arrive


def next_batch(batches: queue.Queue) -> None:
    batches.get()  # never filled


def rank(n: int, barrier) -> None:
    if n == 2:
        next_batch(queue.Queue())
    else:
        all_reduce(barrier)


if __name__ == "__main__":
    barrier = mp.Barrier(4)
    procs = [mp.Process(target=rank, args=(n, barrier)) for n in range(4)]
    for p in procs:
        p.start()
    time.sleep(2)
    try:
        for p in procs:
            out = subprocess.run(["py-spy", "dump", "--pid", str(p.pid)], capture_output=True, text=True, check=True)
            sys.stdout.write(out.stdout)
    finally:
        for p in procs:
            p.kill()
