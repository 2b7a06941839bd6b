"""The job-level step series, folded incrementally from `train_step` events.

Per-rank `train_step` events of a 16,384-rank job arrive at 1,600 a second; re-reading
them every engine pass would not keep up. Each pass adds one partial row per (job, step)
it saw (sums over the ranks it read); a job's series is the sum of its partial rows by
step, which does not depend on the order events arrived in (replay equals live).

A row is keyed by its job, step and `through_seq`, the last `seq` of the pass that folded
it: partial rows of one step from different passes are all kept, and an import that
brings a row already stored (the same export twice) skips it.
"""

import sqlalchemy as sa

from faultgraph.service.store import metadata

train_progress = sa.Table(
    "train_progress",
    metadata,
    sa.Column("job", sa.String, nullable=False, index=True),
    sa.Column("step", sa.BigInteger, nullable=False),
    sa.Column("time", sa.DateTime, nullable=False),  # the latest report of the step
    sa.Column("reports", sa.Integer, nullable=False),
    sa.Column("duration_ms", sa.Float, nullable=False),  # sum over the reports
    sa.Column("through_seq", sa.BigInteger, nullable=False),  # the folding pass's last seq
    info={"key": ("job", "step", "through_seq")},
)
