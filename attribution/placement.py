"""Where a job's ranks run and which ranks share a communicator (SPEC §4).

Rank layout follows Megatron-LM's `RankGenerator`: `order` names the parallel dimensions
from fastest- to slowest-varying (default "tp-dp-pp"), so with tp = 8 the ranks 0–7 form
one tensor-parallel group, and a group of one kind holds the ranks that agree on every
other coordinate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from faultgraph.attribution.topology import Topology

DEFAULT_ORDER = "tp-dp-pp"
# Context parallelism is an independent dimension in Megatron's layout; expert
# parallelism is carved out of data parallelism there and is not modelled here.
DIMENSIONS: tuple[str, ...] = ("tp", "cp", "dp", "pp")


@dataclass(frozen=True)
class Slot:
    """One rank's place: host and local GPU index."""

    host: str
    gpu: int

    @property
    def component(self) -> str:
        return f"{self.host}/gpu{self.gpu}"


@dataclass
class Placement:
    """A job's rank → GPU map plus its parallel layout."""

    slots: list[Slot]
    sizes: dict[str, int]
    order: tuple[str, ...]
    _strides: dict[str, int] = field(init=False, repr=False)
    _by_host: dict[str, list[int]] = field(init=False, repr=False)
    _by_slot: dict[tuple[str, int], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        stride, self._strides = 1, {}
        for dim in self.order:
            self._strides[dim] = stride
            stride *= self.sizes[dim]
        self._by_host = {}
        self._by_slot = {}
        for rank, slot in enumerate(self.slots):
            self._by_host.setdefault(slot.host, []).append(rank)
            self._by_slot[(slot.host, slot.gpu)] = rank

    # ------------------------------------------------------------------------ build

    @classmethod
    def from_job(cls, job: Mapping[str, Any]) -> Placement:
        """Build from a SPEC §4 job body; ValueError names the first problem found."""
        if not isinstance(job, Mapping):
            raise ValueError("job must be an object")
        slots = _slots(job)
        sizes, order = _layout(job.get("parallelism"), len(slots))
        return cls(slots=slots, sizes=sizes, order=order)

    # ---------------------------------------------------------------------- lookups

    @property
    def world_size(self) -> int:
        return len(self.slots)

    def hosts(self) -> list[str]:
        """The job's hosts in order of their first rank."""
        return list(self._by_host)

    def rank_to_gpu(self, rank: int) -> str | None:
        """The GPU component a rank runs on, or None for a rank outside the job."""
        if not _is_int(rank) or not 0 <= rank < len(self.slots):
            return None
        return self.slots[rank].component

    def host_of(self, rank: int) -> str | None:
        if not _is_int(rank) or not 0 <= rank < len(self.slots):
            return None
        return self.slots[rank].host

    def rank_at(self, host: str, gpu: int) -> int | None:
        """The rank on a host's local GPU, or None if the job has none there."""
        return self._by_slot.get((host, gpu))

    def host_ranks(self, host: str) -> list[int]:
        """Ranks placed on one host, ascending ([] for a host outside the job)."""
        return list(self._by_host.get(host, ()))

    def coordinates(self, rank: int) -> dict[str, int]:
        """A rank's index along each parallel dimension."""
        self._check_rank(rank)
        return {dim: (rank // self._strides[dim]) % self.sizes[dim] for dim in self.order}

    def groups(self, kind: str, rank: int) -> list[int]:
        """The ranks of the `kind` ("tp", "cp", "dp", "pp") communicator holding `rank`."""
        self._check_rank(rank)
        stride, size = self._dim(kind)
        base = rank - ((rank // stride) % size) * stride
        return [base + i * stride for i in range(size)]

    def all_groups(self, kind: str) -> list[list[int]]:
        """Every `kind` communicator, each listed once, ordered by its lowest rank."""
        stride, size = self._dim(kind)
        return [
            [rank + i * stride for i in range(size)]
            for rank in range(self.world_size)
            if (rank // stride) % size == 0
        ]

    def footprint(self, topology: Topology, pxn: bool = True) -> set[str]:
        """Component and link ids this job's traffic can cross: its hosts and GPUs, the
        NVSwitches, PCIe switches and NICs they use, and the fabric switches and links
        between its NICs (see `attribution.paths` for the routing rules)."""
        from faultgraph.attribution.paths import Paths

        return Paths(topology, pxn=pxn).footprint(self.rank_to_gpu(r) for r in range(self.world_size))

    def _dim(self, kind: str) -> tuple[int, int]:
        if kind not in self._strides:
            raise ValueError(f"unknown parallel group {kind!r}; known: {', '.join(self.order)}")
        return self._strides[kind], self.sizes[kind]

    def _check_rank(self, rank: int) -> None:
        if not _is_int(rank) or not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank!r} outside the job (world size {self.world_size})")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _slots(job: Mapping[str, Any]) -> list[Slot]:
    explicit = job.get("ranks")
    if explicit is not None:
        return _explicit_slots(explicit)
    hosts, per_host = job.get("hosts"), job.get("gpus_per_host")
    if not isinstance(hosts, list) or not hosts:
        raise ValueError("job needs `hosts` (a non-empty list in rank order) or explicit `ranks`")
    if not _is_int(per_host) or per_host < 1:
        raise ValueError(f"gpus_per_host must be a positive integer, got {per_host!r}")
    seen: set[str] = set()
    for host in hosts:
        if not isinstance(host, str) or not host:
            raise ValueError(f"host names must be non-empty strings, got {host!r}")
        if host in seen:
            raise ValueError(f"host {host} listed twice in `hosts`")
        seen.add(host)
    return [Slot(host, gpu) for host in hosts for gpu in range(per_host)]


def _explicit_slots(ranks: Any) -> list[Slot]:
    if not isinstance(ranks, list) or not ranks:
        raise ValueError("`ranks` must be a non-empty list of {rank, host, gpu}")
    slots: list[Slot | None] = [None] * len(ranks)
    taken: set[tuple[str, int]] = set()
    for entry in ranks:
        if not isinstance(entry, Mapping):
            raise ValueError(f"each rank entry must be an object, got {entry!r}")
        rank, host, gpu = entry.get("rank"), entry.get("host"), entry.get("gpu")
        if not _is_int(rank) or not 0 <= rank < len(ranks):
            raise ValueError(f"rank {rank!r} is not in 0..{len(ranks) - 1} (ranks must be 0..n-1)")
        if not isinstance(host, str) or not host or not _is_int(gpu) or gpu < 0:
            raise ValueError(f"rank {rank} needs a host name and a GPU index >= 0")
        if slots[rank] is not None:
            raise ValueError(f"rank {rank} listed twice")
        if (host, gpu) in taken:
            raise ValueError(f"{host}/gpu{gpu} given to two ranks")
        taken.add((host, gpu))
        slots[rank] = Slot(host, gpu)
    return [s for s in slots if s is not None]


def _layout(parallelism: Any, world: int) -> tuple[dict[str, int], tuple[str, ...]]:
    """Sizes of every dimension and the order they vary in; pure data parallelism when
    the job names none."""
    if parallelism is None:
        parallelism = {}
    if not isinstance(parallelism, Mapping):
        raise ValueError("parallelism must be an object like {\"tp\": 8, \"pp\": 16, \"dp\": 128}")
    unknown = set(parallelism) - set(DIMENSIONS) - {"order"}
    if unknown:
        raise ValueError(f"unknown parallelism {', '.join(sorted(unknown))}; known: {', '.join(DIMENSIONS)}, order")
    sizes: dict[str, int] = {}
    for dim in DIMENSIONS:
        size = parallelism.get(dim, 1)
        if not _is_int(size) or size < 1:
            raise ValueError(f"parallelism {dim} must be a positive integer, got {size!r}")
        sizes[dim] = size
    if "dp" not in parallelism:
        # dp is what is left over, as launchers derive it from the world size.
        rest = sizes["tp"] * sizes["cp"] * sizes["pp"]
        if world % rest:
            raise ValueError(f"world size {world} is not a multiple of tp*cp*pp = {rest}")
        sizes["dp"] = world // rest
    product = sizes["tp"] * sizes["cp"] * sizes["dp"] * sizes["pp"]
    if product != world:
        raise ValueError(
            f"tp*cp*dp*pp = {sizes['tp']}*{sizes['cp']}*{sizes['dp']}*{sizes['pp']} = {product} "
            f"does not equal the world size {world}"
        )
    return sizes, _order(parallelism.get("order", DEFAULT_ORDER), sizes)


def _order(order: Any, sizes: Mapping[str, int]) -> tuple[str, ...]:
    if not isinstance(order, str):
        raise ValueError(f"parallelism order must be a string like {DEFAULT_ORDER!r}")
    named = tuple(order.lower().split("-"))
    if len(set(named)) != len(named) or not set(named) <= set(DIMENSIONS):
        raise ValueError(f"parallelism order {order!r} must name distinct dimensions among {', '.join(DIMENSIONS)}")
    missing = [d for d in DIMENSIONS if d not in named and sizes[d] > 1]
    if missing:
        raise ValueError(f"parallelism order {order!r} leaves out {', '.join(missing)}")
    # Dimensions of size 1 that the order omits vary fastest; they change nothing.
    return tuple(d for d in DIMENSIONS if d not in named) + named

