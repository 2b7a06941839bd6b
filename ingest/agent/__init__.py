"""The host agent: follow log files and the kernel log, parse at the edge, coalesce storms,
spool to disk, and post batches to `/v1/events` with idempotent ids."""
