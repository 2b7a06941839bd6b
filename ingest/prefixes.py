"""Launcher prefixes: what srun, pdsh, mpirun, torchrun and PyTorch put before a process's line.

A training job's output reaches a log file through one or more launchers, each of which
may tag the line with where it came from, outermost first:

- `srun --label`: the Slurm task id, right-aligned (`  7: `, `42: `);
- pdsh (DeepSpeed's multi-node runner): the host (`worker-3: `);
- OpenMPI `--tag-output`: `[jobid,rank]<stdout>:`;
- torchrun (`--tee`, log-line prefix template): the role and local rank (`[default3]:`);
- PyTorch >= 2.2 itself: the global rank (`[rank42]:`).

`strip_prefix` removes every one of them and says what they named, so a line parses the
same however it was launched, and lines of different processes interleaved in one file
can be told apart (`Prefixed.key`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SRUN = re.compile(r" {0,7}(\d{1,6}): ")
_MPI = re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>: ?")
_RANK = re.compile(r"\[rank(\d+)\]: ?")
_ROLE = re.compile(r"\[([a-z_]+?)(\d+)\]: ?")
# A host prefix only where another prefix or a process's own line format follows (a
# launcher prefix, a Python log stamp, glog, NCCL's prefix, a traceback's lines), so a
# syslog tag, "ib0: lost carrier" or a driver's "NVRM: " is never taken for a host.
_HOST = re.compile(r"([A-Za-z0-9][\w.-]{0,62}): (?=\[rank\d|\[default\d|\[\d{4}-\d\d-\d\d|"
                   r"\[[IWEF]\d{3,4} |\[\d+,\d+\]<std|\s{0,7}\d{1,6}: |[\w.-]+:\d+:\d+ \[\d+\] |"
                   r"  +\S|Traceback \(most recent call last\):|"
                   r"[A-Za-z_][\w.]*(?:Error|Exception|Interrupt):)")
# One cheap test that rejects nearly every line with no prefix (one C-level match).
_MAYBE = re.compile(r" {0,7}\d{1,6}: |\[(?:rank\d|[a-z_]+\d+\]:|\d+,\d+\]<)|[A-Za-z0-9][\w.-]{0,62}: [\[ \dTA-Za-z_]")


def has_prefix(line: str) -> bool:
    """Whether `line` may start with a launcher prefix (False: it certainly does not)."""
    return _MAYBE.match(line) is not None


class Prefixed(NamedTuple):
    """A line without its launcher prefixes, and what they said.

    `rank` is the job's global rank: PyTorch's `[rankN]:`, else OpenMPI's rank, else the
    srun task id when no torchrun prefix says the task runs several ranks. `local_rank`
    is torchrun's, `task` srun's, `host` pdsh's. `key` is the prefix text itself: lines
    with the same key come from the same process.
    """

    text: str
    rank: int | None = None
    local_rank: int | None = None
    task: int | None = None
    host: str | None = None
    key: str = ""


# What a line without launcher prefixes has (its text is not kept: the line itself is it).
NO_PREFIX = Prefixed("")


def strip_prefix(line: str) -> Prefixed:
    """`line` without the launcher prefixes it starts with (any number, any order)."""
    if _MAYBE.match(line) is None:
        return Prefixed(line)
    pos = 0
    rank = local_rank = task = mpi_rank = None
    host = None
    while True:
        c = line[pos:pos + 1]
        if c == "[":
            m = _RANK.match(line, pos)
            if m:
                rank = int(m.group(1))
            else:
                m = _MPI.match(line, pos)
                if m:
                    mpi_rank = int(m.group(1))
                else:
                    m = _ROLE.match(line, pos)
                    if not m or m.group(1) == "rank":
                        break
                    local_rank = int(m.group(2))
        elif c == " " or c.isdigit():
            m = _SRUN.match(line, pos) if task is None else None
            if m:
                task = int(m.group(1))
            else:
                m = _HOST.match(line, pos) if host is None and c != " " else None
                if not m:
                    break
                host = m.group(1)
        elif c.isalpha():
            m = _HOST.match(line, pos) if host is None else None
            if not m:
                break
            host = m.group(1)
        else:
            break
        pos = m.end()
    if pos == 0:
        return Prefixed(line)
    if rank is None:
        rank = mpi_rank if mpi_rank is not None else (task if local_rank is None else None)
    return Prefixed(line[pos:], rank, local_rank, task, host, line[:pos].strip())
