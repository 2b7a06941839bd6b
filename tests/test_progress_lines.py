"""Training progress lines from public sources → train_step / train_anomaly events."""

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from faultgraph.ingest import progress
from faultgraph.ingest.parse import parse_line

LINES = [orjson.loads(line) for line in (Path(__file__).parent / "data" / "progress_lines.jsonl").read_bytes().splitlines()]
AT = datetime(2026, 11, 29, 8, tzinfo=UTC)


@pytest.mark.parametrize("case", LINES, ids=[f"{c['framework']}-{i}" for i, c in enumerate(LINES)])
def test_each_framework_line(case):
    expect = case["expect"]
    read = progress.read(case["line"])
    assert read is not None and read.framework == case["framework"]
    for name in ("step", "duration_ms", "loss", "grad_norm"):
        if name in expect:
            assert getattr(read, name) == pytest.approx(expect[name])
    if "tps" in expect:
        assert read.tokens_per_s == expect["tps"]
    event = parse_line(case["line"], host="node0007", received=AT)
    if expect["kind"] in ("train_step", "train_anomaly"):
        assert event["kind"] == expect["kind"] and event["host"] == "node0007" and event["time"] == AT
    if expect["kind"] == "train_step" and "duration_ms" in expect:
        assert event["attrs"]["step"] == expect["step"]
        assert event["attrs"]["duration_ms"] == pytest.approx(expect["duration_ms"])
    elif expect["kind"] == "train_anomaly":
        assert event["attrs"]["type"] == expect["type"]
    else:  # no step time in the line: nothing to post
        assert event is None


def test_other_lines_are_not_progress():
    assert progress.read("NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE") is None
    assert progress.read("the iteration count is 5 | not megatron") is None
    assert parse_line("{'eval_loss': 0.5, 'epoch': 1.0}", host="h", received=AT) is None
