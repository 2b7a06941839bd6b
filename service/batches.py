"""A posted batch once decoded: the events kept and the entries refused, by their index.

A leaf both `events` (which decodes batches) and `auth` (which refuses events for hosts a
token may not post for) use, so neither package imports the other's internals.
"""

from dataclasses import dataclass, field


@dataclass
class Decoded:
    """A posted batch split into valid events and rejected entries (by index)."""

    valid: list[dict] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)
