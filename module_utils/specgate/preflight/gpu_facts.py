"""Turn `nvidia-smi` output into the `specgate_gpu` fact.

Parsing is kept apart from running the binary so every output format (H200, RTX PRO 6000 on PCIe,
B300 on NVLink) is a plain-text fixture in the unit tests.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import Any

# The exact fields and order of the query the module runs; the parser relies on this order.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "compute_cap",
    "memory.total",
    "memory.used",
    "driver_version",
)
QUERY_ARGS: tuple[str, ...] = (f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits")

# Compute capability → the SM family specgate deploys on. Anything else (Ampere, Ada, …) is not a target.
ARCH_BY_COMPUTE_CAPABILITY: dict[str, str] = {
    "9.0": "sm90",
    "10.0": "sm100",
    "10.3": "sm103",
    "12.0": "sm120",
}

_NO_DEVICE_MARKERS = ("No devices were found", "NVIDIA-SMI has failed", "couldn't communicate with the NVIDIA driver")
_CUDA_VERSION_RE = re.compile(r"CUDA Version\s*:\s*(\d+\.\d+)")
_NVLINK_CELL_RE = re.compile(r"^NV\d+$")
_GPU_LABEL_RE = re.compile(r"^GPU\d+$")
# nvidia-smi underlines the topo header with terminal escapes on some driver versions.
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


class GpuParseError(ValueError):
    """nvidia-smi printed something this parser does not understand."""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str
    pci_bus_id: str
    compute_capability: str
    memory_total_mib: int
    memory_used_mib: int
    driver_version: str


@dataclass(frozen=True)
class Topology:
    interconnect: str | None
    links: dict[str, int] = field(default_factory=dict)


def arch_for(compute_capability: str) -> str | None:
    """SM family for a compute capability such as "12.0"; None when specgate has no lane for it."""
    return ARCH_BY_COMPUTE_CAPABILITY.get(compute_capability.strip())


def no_devices(text: str) -> bool:
    """True when nvidia-smi says there is no usable GPU (no device, or no driver loaded)."""
    return any(marker in text for marker in _NO_DEVICE_MARKERS)


def parse_query(text: str) -> list[Gpu]:
    """Parse the csv,noheader,nounits answer to QUERY_ARGS, one GPU per line."""
    gpus: list[Gpu] = []
    for lineno, row in enumerate(csv.reader(line for line in text.splitlines() if line.strip()), start=1):
        cells = [cell.strip() for cell in row]
        if len(cells) != len(QUERY_FIELDS):
            raise GpuParseError(
                f"nvidia-smi query line {lineno} has {len(cells)} fields, expected {len(QUERY_FIELDS)} "
                f"({','.join(QUERY_FIELDS)}): {','.join(cells)!r}"
            )
        index, name, uuid, bus_id, capability, total, used, driver = cells
        try:
            gpus.append(
                Gpu(
                    index=int(index),
                    name=name,
                    uuid=uuid,
                    pci_bus_id=bus_id,
                    compute_capability=capability,
                    memory_total_mib=int(float(total)),
                    memory_used_mib=int(float(used)),
                    driver_version=driver,
                )
            )
        except ValueError as exc:
            raise GpuParseError(f"nvidia-smi query line {lineno} has a non-numeric field: {exc}") from exc
    return sorted(gpus, key=lambda gpu: gpu.index)


def parse_cuda_driver_version(text: str) -> str | None:
    """CUDA version the driver supports, from plain `nvidia-smi` or `nvidia-smi -q` output."""
    match = _CUDA_VERSION_RE.search(text)
    return match.group(1) if match else None


def parse_topology(text: str) -> Topology:
    """Classify GPU-to-GPU links of `nvidia-smi topo -m`: any NV# link → nvlink, else pcie.

    One GPU has no GPU-to-GPU link, so its interconnect is None.
    """
    lines = [_ANSI_RE.sub("", line) for line in text.splitlines() if line.strip()]
    # The header's first label is GPU0 too; GPU0's own row is told apart by its "X" (self) cell.
    header = next((line for line in lines if line.split()[:1] == ["GPU0"] and line.split()[1:2] != ["X"]), None)
    if header is None:
        raise GpuParseError("nvidia-smi topo -m: no header line naming GPU0")
    columns = [token for token in header.split() if _GPU_LABEL_RE.match(token)]
    links: dict[str, int] = {}
    for line in lines:
        tokens = line.split()
        if line is header or tokens[0] not in columns:
            continue
        cells = tokens[1 : 1 + len(columns)]
        if len(cells) != len(columns):
            raise GpuParseError(
                f"nvidia-smi topo -m: row {tokens[0]} has {len(cells)} GPU cells, expected {len(columns)}"
            )
        for column, cell in zip(columns, cells, strict=True):
            if column == tokens[0] or cell == "X":
                continue
            kind = "NV#" if _NVLINK_CELL_RE.match(cell) else cell
            links[kind] = links.get(kind, 0) + 1
    if not links:
        return Topology(interconnect=None, links={})
    return Topology(interconnect="nvlink" if "NV#" in links else "pcie", links=links)


def _capability_key(capability: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in capability.split("."))


def build_fact(gpus: list[Gpu], topology: Topology | None, cuda_driver_version: str | None) -> dict[str, Any]:
    """The `specgate_gpu` fact as CONTRIBUTING.md defines it (all-null when the host has no GPU)."""
    if not gpus:
        return {
            "count": 0,
            "names": [],
            "arch": None,
            "compute_capability": None,
            "memory_total_mib": None,
            "interconnect": None,
            "driver_version": None,
            "cuda_driver_version": None,
            "has_gpus": False,
        }
    capabilities = sorted({gpu.compute_capability for gpu in gpus}, key=_capability_key)
    # A mixed box has no single arch; preflight refuses it by name, so report the lowest capability's arch.
    capability = capabilities[0]
    return {
        "count": len(gpus),
        "names": [gpu.name for gpu in gpus],
        "arch": arch_for(capability),
        "compute_capability": capability if len(capabilities) == 1 else ",".join(capabilities),
        "memory_total_mib": min(gpu.memory_total_mib for gpu in gpus),
        "interconnect": topology.interconnect if topology else None,
        "driver_version": gpus[0].driver_version,
        "cuda_driver_version": cuda_driver_version,
        "has_gpus": True,
    }
