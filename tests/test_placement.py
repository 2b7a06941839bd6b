"""Job placement and communicator groups against hand-computed Megatron-LM layouts."""

import pytest

from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology


def _job(hosts: int, per_host: int = 8, **parallelism) -> Placement:
    return Placement.from_job({
        "id": "j", "gpus_per_host": per_host,
        "hosts": [f"node{h:04d}" for h in range(hosts)],
        "parallelism": parallelism,
    })


def test_rank_layout_from_host_list():
    job = _job(2, tp=8, dp=2)
    assert job.world_size == 16
    assert job.rank_to_gpu(0) == "node0000/gpu0"
    assert job.rank_to_gpu(11) == "node0001/gpu3"
    assert job.rank_to_gpu(16) is None and job.rank_to_gpu(-1) is None and job.rank_to_gpu("3") is None
    assert job.host_ranks("node0001") == list(range(8, 16)) and job.host_ranks("node0002") == []
    assert job.rank_at("node0001", 3) == 11 and job.rank_at("node0001", 9) is None
    assert job.hosts() == ["node0000", "node0001"]


def test_tp8_ranks_0_to_7_form_one_group():
    job = _job(4, tp=8, pp=2, dp=2)
    assert job.groups("tp", 5) == list(range(8))
    assert job.groups("tp", 9) == list(range(8, 16))


def test_tp2_pp2_dp2_on_8_ranks():
    # Default order tp-dp-pp: rank = tp + 2*dp + 4*pp.
    job = _job(1, tp=2, pp=2, dp=2)
    assert job.all_groups("tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert job.all_groups("dp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert job.all_groups("pp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert job.coordinates(6) == {"tp": 0, "cp": 0, "dp": 1, "pp": 1}


def test_megatron_docstring_example():
    # megatron/core/parallel_state.py, initialize_model_parallel: 16 GPUs, tp=2, pp=4.
    job = _job(2, tp=2, pp=4)
    assert job.all_groups("dp") == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert job.all_groups("tp") == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert job.all_groups("pp") == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


def test_custom_order():
    job = _job(1, tp=2, pp=2, dp=2, order="tp-pp-dp")
    assert job.groups("pp", 0) == [0, 2]
    assert job.groups("dp", 1) == [1, 5]
    assert job.groups("tp", 6) == [6, 7]


def test_no_parallelism_is_data_parallel():
    job = Placement.from_job({"hosts": ["a", "b"], "gpus_per_host": 2})
    assert job.groups("dp", 3) == [0, 1, 2, 3]
    assert job.groups("tp", 3) == [3]


def test_explicit_ranks():
    job = Placement.from_job({"ranks": [
        {"rank": 1, "host": "b", "gpu": 0},
        {"rank": 0, "host": "a", "gpu": 5},
        {"rank": 2, "host": "a", "gpu": 4},
    ]})
    assert [job.rank_to_gpu(r) for r in range(3)] == ["a/gpu5", "b/gpu0", "a/gpu4"]
    assert job.host_ranks("a") == [0, 2]


@pytest.mark.parametrize(
    ("job", "words"),
    [
        ({"hosts": ["a"], "gpus_per_host": 8, "parallelism": {"tp": 4, "pp": 4, "dp": 1}}, "world size 8"),
        ({"hosts": ["a"], "gpus_per_host": 8, "parallelism": {"tp": 3}}, "not a multiple"),
        ({"hosts": ["a", "a"], "gpus_per_host": 8}, "listed twice"),
        ({"hosts": [], "gpus_per_host": 8}, "hosts"),
        ({"hosts": ["a"], "gpus_per_host": 0}, "gpus_per_host"),
        ({"hosts": ["a"], "gpus_per_host": 2, "parallelism": {"ep": 2}}, "unknown parallelism ep"),
        ({"hosts": ["a"], "gpus_per_host": 4, "parallelism": {"tp": 2, "pp": 2, "order": "tp-dp"}}, "leaves out pp"),
        ({"hosts": ["a"], "gpus_per_host": 4, "parallelism": {"tp": 2, "order": "tp-tp-dp"}}, "distinct"),
        ({"hosts": ["a"], "gpus_per_host": 2, "parallelism": {"tp": "2"}}, "positive integer"),
        ({"ranks": [{"rank": 0, "host": "a", "gpu": 0}, {"rank": 2, "host": "a", "gpu": 1}]}, "0..1"),
        ({"ranks": [{"rank": 0, "host": "a", "gpu": 0}, {"rank": 1, "host": "a", "gpu": 0}]}, "two ranks"),
        ({"ranks": [{"rank": 0, "host": "a", "gpu": 0}, {"rank": 0, "host": "a", "gpu": 1}]}, "listed twice"),
        ([1, 2], "object"),
    ],
)
def test_invalid_jobs_name_the_problem(job, words):
    with pytest.raises(ValueError, match=words):
        Placement.from_job(job)


def test_bad_group_queries():
    job = _job(1, tp=8)
    with pytest.raises(ValueError, match="unknown parallel group"):
        job.groups("ep", 0)
    with pytest.raises(ValueError, match="outside the job"):
        job.groups("tp", 8)


@pytest.fixture(scope="module")
def cluster() -> Topology:
    return Topology.from_dict(rail_optimized(hosts=8, hosts_per_su=4, spines=2))


def test_footprint_inside_one_scalable_unit(cluster):
    ids = _job(2, tp=8, dp=2).footprint(cluster)
    for host in ("node0000", "node0001"):
        assert host in ids
        assert {f"{host}/gpu{i}" for i in range(8)} <= ids
        assert {f"{host}/nic{i}" for i in range(8)} <= ids
        assert {f"{host}/nvswitch{k}" for k in range(4)} <= ids
        assert {f"{host}/pciesw{k}" for k in range(4)} <= ids
        assert f"{host}/gpu3~{host}/nvswitch2" in ids and f"{host}/nic3~{host}/pciesw1" in ids
    assert {f"leaf-s0-r{i}" for i in range(8)} <= ids
    assert "leaf-s0-r5~node0001/nic5" in ids
    assert "node0002" not in ids and "leaf-s1-r0" not in ids
    assert not [i for i in ids if "spine" in i]  # rails meet on their own leaf; PXN keeps them there
    assert not [i for i in ids if "/cpu" in i]


def test_footprint_across_scalable_units_climbs_to_spines(cluster):
    job = Placement.from_job({"hosts": ["node0000", "node0005"], "gpus_per_host": 8})
    ids = job.footprint(cluster)
    assert {"spine-00", "spine-01", "leaf-s0-r3~spine-01", "leaf-s1-r7~spine-00"} <= ids
    assert "leaf-s0-r3" in ids and "leaf-s1-r3" in ids


def test_footprint_without_pxn_crosses_rails_on_spines(cluster):
    ids = _job(2).footprint(cluster, pxn=False)
    assert {"spine-00", "spine-01"} <= ids
