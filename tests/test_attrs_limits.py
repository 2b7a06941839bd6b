"""The bounds on an event's free-form attrs (service/events/models.py): each limit refused by
name, on both sides of the shortcut that skips the walk for small attrs."""

import pytest
from pydantic import ValidationError

from faultgraph.service.events.models import (
    MAX_ATTRS_BYTES,
    MAX_ATTRS_DEPTH,
    MAX_KEY_CHARS,
    MAX_STRING_CHARS,
    OneEvent,
)


def nested(depth: int) -> dict:
    attrs: dict = {}
    for _ in range(depth - 1):
        attrs = {"a": attrs}
    return attrs


def validate(attrs: dict) -> dict:
    return OneEvent.validate_python({"time": "2026-11-30T00:00:00Z", "host": "n1", "kind": "nic_error", "attrs": attrs})


@pytest.mark.parametrize(("attrs", "words"), [
    (nested(MAX_ATTRS_DEPTH + 1), f"nests deeper than {MAX_ATTRS_DEPTH} levels"),
    ({"k" * (MAX_KEY_CHARS + 1): 1}, f"has a key longer than {MAX_KEY_CHARS} characters"),
    ({"deep": {"s": "x" * (MAX_STRING_CHARS + 1)}}, f"attrs.deep.s is longer than {MAX_STRING_CHARS} characters"),
    ({"n": 2**64}, "attrs.n is an integer outside 64 bits"),
    ({"n": -(2**63) - 1}, "attrs.n is an integer outside 64 bits"),
    ({"x": float("inf")}, "attrs.x is not a finite number"),
    ({"list": [1, float("nan")]}, "attrs.list[1] is not a finite number"),
    ({f"k{i}": "x" * 1000 for i in range(MAX_ATTRS_BYTES // 1000 + 1)}, f"exceed the limit of {MAX_ATTRS_BYTES} bytes"),
])
def test_each_limit_is_refused_by_name(attrs, words):
    with pytest.raises(ValidationError) as refused:
        validate(attrs)
    assert words in str(refused.value)


@pytest.mark.parametrize("attrs", [
    {}, {"device": "mlx5_0", "port": 1, "count": 3}, nested(MAX_ATTRS_DEPTH), {"k" * MAX_KEY_CHARS: None},
    {"n": 2**64 - 1, "m": -(2**63)}, {"s": "x" * MAX_STRING_CHARS}, {"x": None, "y": [None, 1.5]},
])
def test_attrs_within_every_limit_are_kept_as_sent(attrs):
    assert validate(attrs)["attrs"] == attrs
