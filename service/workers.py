"""`faultgraph serve --workers N`: N server processes on one listening socket.

One interpreter lock bounds a server process to about one core of ingest (validation,
conversion and the engine all hold it), so a PostgreSQL store can take more than one
process on one machine. Each worker is a whole replica, as replicas behind a load balancer
are: its own writer, token copy and ingest limits, and one of them leads the engine and the
watchers through the lease. The workers are forked after the socket is bound, and the
kernel hands each connection to whichever accepts first.

The parent only supervises: SIGTERM or SIGINT is passed on to every worker, which finishes
what it acknowledged and stops; a worker that exits on its own takes the others down with
it and the parent exits 1, so the service manager restarts the whole service instead of a
smaller one running on unnoticed. A parent killed outright (SIGKILL, the OOM killer) takes
its workers along too: each asks the kernel for a SIGTERM when its parent dies (Linux's
parent-death signal), so no orphan keeps serving on the port. (A DuckDB file has one
owning process: `serve` refuses more than one worker there.)
"""

import ctypes
import logging
import os
import signal
import socket
from collections.abc import Callable

log = logging.getLogger("faultgraph")

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _stop_with_parent(parent: int) -> None:
    """In a worker: SIGTERM when the parent dies, and now if it already has (the signal is
    only sent for a death after the request)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("worker %d: no parent-death signal (%s)", os.getpid(), os.strerror(ctypes.get_errno()))
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def run_workers(serve: Callable[[socket.socket], None], sock: socket.socket, workers: int) -> int:
    """Fork `workers` processes each running `serve(sock)`; wait for them; the exit code."""
    children: set[int] = set()
    stopping = False

    def stop_all(signum: int, _frame: object = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    # Handlers before the first fork: a signal between two forks still reaches the forked.
    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    parent = os.getpid()
    for _ in range(workers):
        if stopping:
            break
        pid = os.fork()
        if pid == 0:  # the worker: uvicorn installs its own handlers while it serves
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _stop_with_parent(parent)
            code = 0
            try:
                serve(sock)
            except BaseException:
                log.exception("worker %d failed", os.getpid())
                code = 1
            os._exit(code)
        children.add(pid)
    log.info("%d workers serving: %s", len(children), " ".join(map(str, sorted(children))))
    code = 0
    while children:
        pid, status = os.wait()
        children.discard(pid)
        if not stopping:
            log.error("worker %d exited (%d) on its own: stopping the others", pid, os.waitstatus_to_exitcode(status))
            code = 1
            stop_all(signal.SIGTERM)
    return code
