"""Training progress lines → job-level `train_step` and `train_anomaly` events (SPEC §1).

Megatron-LM and NeMo print the step's elapsed time, so a line alone is a `train_step`;
torchtitan and the Hugging Face Trainer print loss and throughput but no step time, so
their lines yield only anomalies. A NaN or infinite loss or gradient norm is a
`train_anomaly` (`nan` for the loss, `grad_norm` for the norm). `parse_line` calls `parse`
first; it is cheap on every other line (one substring test, `loss`).
Real examples with their sources: tests/data/progress_lines.jsonl.
"""

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_NUMBER = r"([-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|nan|inf|-inf))"


@dataclass(frozen=True)
class Progress:
    """What one progress line says."""

    framework: str
    step: int | None
    duration_ms: float | None = None
    loss: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None


def _num(text: str | None) -> float | None:
    return None if text is None else float(text.replace(",", ""))


def _field(line: str, name: str) -> float | None:
    match = re.search(re.escape(name) + r":?\s*" + _NUMBER, line)
    return _num(match.group(1)) if match else None


def _megatron(line: str) -> Progress | None:
    match = re.search(r"\biteration\s+(\d+)/\s*\d+ \|", line)
    if not match:
        return None
    return Progress("megatron", int(match.group(1)), _field(line, "elapsed time per iteration (ms)"),
                    _field(line, "lm loss"), _field(line, "grad norm"))


def _nemo(line: str) -> Progress | None:
    if "train_step_timing in s" not in line:
        return None
    step = _field(line, "global_step")
    seconds = _field(line, "train_step_timing in s")
    return Progress("nemo", int(step) if step is not None else None, seconds * 1000 if seconds is not None else None,
                    _field(line, "reduced_train_loss"))


def _torchtitan(line: str) -> Progress | None:
    match = re.search(r" - INFO - step:\s*(\d+)\s+loss:", line)
    if not match:
        return None
    return Progress("torchtitan", int(match.group(1)), None, _field(line, "loss"), _field(line, "grad_norm"),
                    _field(line, "tps"))


def _hf_trainer(line: str) -> Progress | None:
    body = line.strip()
    if not (body.startswith("{") and body.endswith("}") and "loss" in body and "epoch" in body):
        return None
    values = dict(re.findall(r"['\"](\w+)['\"]:\s*" + _NUMBER, body))
    if "loss" not in values:
        return None
    step = _num(values.get("step"))
    return Progress("hf_trainer", int(step) if step is not None else None, None, _num(values["loss"]),
                    _num(values.get("grad_norm")))


# Framework readers, each guarded by a substring every one of its lines carries; NeMo's
# lines also say `iteration N/M |`, so they are tried first.
_READERS = (("train_step_timing", _nemo), (" iteration ", _megatron), ("- INFO - step:", _torchtitan),
            ("'loss'", _hf_trainer), ('"loss"', _hf_trainer))


def read(line: str) -> Progress | None:
    """The progress a line reports, or None for any other line."""
    if "loss" not in line:  # every framework's progress line prints one (Megatron: `loss scale` at least)
        return None
    for marker, reader in _READERS:
        if marker in line:
            found = reader(line)
            if found is not None:
                return found
    return None


def _bad(value: float | None) -> bool:
    return value is not None and (math.isnan(value) or math.isinf(value))


def parse(line: str, *, host: str | None, time: datetime, source: str | None = None) -> dict[str, Any] | None:
    """The `train_step` a progress line yields, or None: a line without a step time, or one
    whose loss or grad norm is not finite — that one is an anomaly, and the catalogue's
    training-anomaly rules (catalogue/patterns.toml) say so."""
    progress = read(line)
    if progress is None or host is None or _bad(progress.loss) or _bad(progress.grad_norm):
        return None
    base = {"time": time, "host": host, "message": line.strip()[:2000]}
    tag = {"framework": progress.framework, **({"source": source} if source else {})}
    if progress.step is None or progress.duration_ms is None:
        return None
    attrs = {"step": progress.step, "duration_ms": progress.duration_ms, **tag}
    for name, value in (("loss", progress.loss), ("grad_norm", progress.grad_norm)):
        if value is not None:
            attrs[name] = value
    return {**base, "kind": "train_step", "severity": "info", "attrs": attrs}


class LossWatch:
    """Loss spikes in one job's progress lines: a loss far above the recent median.

    Stateful, so the agent keeps one per followed source. A spike is a loss at least
    `factor` × the median of the last `window` losses and `z` robust standard deviations
    above it; the spike's own value does not enter the baseline.
    """

    def __init__(self, *, window: int = 50, factor: float = 1.5, z: float = 6.0, min_history: int = 20) -> None:
        self.window, self.factor, self.z, self.min_history = window, factor, z, min_history
        self._losses: list[float] = []

    def add(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Feed a parsed `train_step`; returns a `train_anomaly` event for a spike, else None."""
        attrs = event.get("attrs") or {}
        loss = attrs.get("loss")
        if event.get("kind") != "train_step" or not isinstance(loss, float) or _bad(loss):
            return None
        history = sorted(self._losses)
        spike = None
        if len(history) >= self.min_history:
            middle = history[len(history) // 2]
            spread = 1.4826 * sorted(abs(x - middle) for x in history)[len(history) // 2]
            if loss >= self.factor * middle and loss >= middle + self.z * spread:
                spike = {**event, "kind": "train_anomaly", "severity": "error",
                         "attrs": {"type": "loss_spike", "step": attrs["step"], "value": loss, "baseline": middle,
                                   "framework": attrs.get("framework")}}
        if spike is None:
            self._losses = (self._losses + [loss])[-self.window:]
        return spike
