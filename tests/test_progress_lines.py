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


def test_a_loss_spike_after_steady_losses_is_an_anomaly_once():
    watch = progress.LossWatch()
    megatron = next(c["line"] for c in LINES if c["framework"] == "megatron")
    base = parse_line(megatron, host="node0007", received=AT)
    losses = [2.50, 2.49, 2.56, 2.48, 2.51, 2.47, 2.53, 2.50, 2.46, 2.52] * 3
    for step, loss in enumerate(losses, start=1):
        assert watch.add({**base, "attrs": {**base["attrs"], "step": step, "loss": loss}}) is None
    spike = watch.add({**base, "attrs": {**base["attrs"], "step": 31, "loss": 9.1}})
    assert spike["kind"] == "train_anomaly" and spike["attrs"]["type"] == "loss_spike"
    assert spike["attrs"]["step"] == 31 and spike["attrs"]["baseline"] == pytest.approx(2.5, abs=0.02)
    assert watch.add({**base, "attrs": {**base["attrs"], "step": 32, "loss": 2.6}}) is None  # the spike left no trace
