"""gpu_facts parsing: the three box shapes specgate targets, plus the outputs that must not pass silently."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.specgate.preflight.gpu_facts import (
    GpuParseError,
    arch_for,
    build_fact,
    no_devices,
    parse_cuda_driver_version,
    parse_query,
    parse_topology,
)

pytestmark = pytest.mark.host

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"


def fixture(box: str, name: str) -> str:
    return (FIXTURES / box / name).read_text(encoding="utf-8")


def fact_for(box: str) -> dict:
    return build_fact(
        parse_query(fixture(box, "query_gpu.csv")),
        parse_topology(fixture(box, "topo_m.txt")),
        parse_cuda_driver_version(fixture(box, "smi.txt")),
    )


def test_sm120_pcie_box_is_eight_sm120_gpus_on_pcie():
    fact = fact_for("ct200_sm120_pcie")
    assert fact["count"] == 8
    assert fact["arch"] == "sm120"
    assert fact["compute_capability"] == "12.0"
    assert fact["interconnect"] == "pcie"
    assert fact["memory_total_mib"] == 97887
    assert fact["driver_version"] == "580.95.05"
    assert fact["cuda_driver_version"] == "13.0"
    assert fact["names"][0] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def test_b300_box_is_eight_sm103_gpus_on_nvlink():
    fact = fact_for("b300_nvlink")
    assert (fact["count"], fact["arch"], fact["interconnect"]) == (8, "sm103", "nvlink")
    assert fact["memory_total_mib"] == 275040


def test_pcie_topology_counts_each_link_kind_and_no_nvlink():
    topology = parse_topology(fixture("ct200_sm120_pcie", "topo_m.txt"))
    assert "NV#" not in topology.links
    # 8 GPUs → 56 ordered pairs: 8 PIX (4 pairs), 16 NODE, 32 SYS across the sockets.
    assert topology.links == {"PIX": 8, "NODE": 16, "SYS": 32}


def test_nvlink_topology_counts_every_pair_as_nvlink():
    assert parse_topology(fixture("b300_nvlink", "topo_m.txt")).links == {"NV#": 56}


def test_single_gpu_topology_has_no_interconnect():
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-31\t0\t\tN/A\n\nLegend:\n  X    = Self\n"
    assert parse_topology(text).interconnect is None


def test_topology_header_with_terminal_underline_escapes_parses():
    text = "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\x1b[0m\nGPU0\t X \tNV18\t0-7\nGPU1\tNV18\t X \t0-7\n"
    assert parse_topology(text).interconnect == "nvlink"


def test_topology_without_header_is_an_error():
    with pytest.raises(GpuParseError, match="no header"):
        parse_topology("something else entirely\n")


def test_query_with_missing_field_names_the_expected_fields():
    with pytest.raises(GpuParseError, match=r"has 7 fields, expected 8 \(index,name,uuid"):
        parse_query("0, NVIDIA H200, GPU-1, 00000000:19:00.0, 9.0, 143771, 0\n")


def test_query_with_not_available_memory_is_an_error():
    with pytest.raises(GpuParseError, match="non-numeric"):
        parse_query("0, NVIDIA H200, GPU-1, 00000000:19:00.0, 9.0, [N/A], 0, 570.86.15\n")


def test_query_sorts_gpus_by_index():
    text = (
        "1, NVIDIA H200, GPU-b, 00000000:2A:00.0, 9.0, 143771, 10, 570.86.15\n"
        "0, NVIDIA H200, GPU-a, 00000000:19:00.0, 9.0, 143771, 0, 570.86.15\n"
    )
    assert [gpu.uuid for gpu in parse_query(text)] == ["GPU-a", "GPU-b"]


@pytest.mark.parametrize(
    ("capability", "arch"),
    [("9.0", "sm90"), ("10.0", "sm100"), ("10.3", "sm103"), ("12.0", "sm120"), ("8.9", None), ("12.1", None)],
)
def test_compute_capability_maps_to_sm_family(capability, arch):
    assert arch_for(capability) == arch


def test_mixed_box_reports_every_capability_and_the_lowest_arch():
    text = (
        "0, NVIDIA H200, GPU-a, 00000000:19:00.0, 9.0, 143771, 0, 580.95.05\n"
        "1, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-b, 00000000:2A:00.0, 12.0, 97887, 0, 580.95.05\n"
    )
    fact = build_fact(parse_query(text), None, "13.0")
    assert fact["compute_capability"] == "9.0,12.0"
    assert fact["arch"] == "sm90"
    assert fact["memory_total_mib"] == 97887


def test_no_gpu_fact_is_all_empty():
    fact = build_fact([], None, None)
    assert fact["has_gpus"] is False
    assert fact["count"] == 0
    assert fact["arch"] is None


@pytest.mark.parametrize(
    "text",
    [
        "No devices were found",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
        "NVIDIA driver is installed and running.",
    ],
)
def test_no_device_messages_are_recognised(text):
    assert no_devices(text)


def test_cuda_driver_version_is_read_from_plain_and_query_output():
    assert (
        parse_cuda_driver_version("| NVIDIA-SMI 570.86.15  Driver Version: 570.86.15  CUDA Version: 12.8 |") == "12.8"
    )
    assert parse_cuda_driver_version("CUDA Version                              : 13.0\n") == "13.0"
    assert parse_cuda_driver_version("no version here") is None


def test_real_h200_capture_is_one_sm90_gpu_without_interconnect():
    """The lent H200's real outputs (underlined topo header, driver 580, CUDA 13.0)."""
    fact = fact_for("h200")
    assert (fact["count"], fact["arch"], fact["compute_capability"]) == (1, "sm90", "9.0")
    assert fact["names"] == ["NVIDIA H200"]
    assert fact["memory_total_mib"] == 143771
    assert fact["interconnect"] is None
    assert (fact["driver_version"], fact["cuda_driver_version"]) == ("580.159.04", "13.0")


def test_real_h200_query_output_of_nvidia_smi_q_gives_the_same_cuda_version():
    assert parse_cuda_driver_version(fixture("h200", "smi_q.txt")) == "13.0"
