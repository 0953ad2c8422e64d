"""preflight's own checks of the host, before anything on it changes: GPUs present and of one supported arch,
free disk, RAM, OS. Every problem names the variable to change and how.

How each later stage's settings fit the host is that stage's own check, in its validate entry point (run right
after these facts): the CUDA toolkit against the arch and the driver (cuda_toolkit), the SGLang release
against its CUDA lane (sglang_env), parallel sizes and attention backends against the GPUs (sglang_service,
service_fit), what SGLang's flags allow together (sglang_flags).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class Problem:
    variable: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.variable}: {self.message} Fix: {self.fix}"


@dataclass
class Deployment:
    """The preflight_* inputs, names without the prefix."""

    expect_gpus: bool = True
    min_free_gib: dict[str, float] = field(default_factory=dict)
    min_ram_gib: float = 0
    supported_os: list[str] = field(default_factory=list)


def _var(name: str) -> str:
    return f"preflight_{name}"


def check_gpus(dep: Deployment, gpu: dict[str, Any]) -> list[Problem]:
    if not gpu.get("has_gpus"):
        if dep.expect_gpus:
            return [
                Problem(
                    _var("expect_gpus"),
                    "no NVIDIA GPU answered nvidia-smi on this host, but the host is expected to have GPUs.",
                    "install the NVIDIA driver (or fix preflight_nvidia_smi), or set preflight_expect_gpus: false "
                    "for a demo/test host that serves the simulator.",
                )
            ]
        return []
    problems: list[Problem] = []
    if len(set(gpu.get("names") or [])) > 1 or "," in str(gpu.get("compute_capability")):
        problems.append(
            Problem(
                "specgate_gpu",
                f"the host mixes GPU models {sorted(set(gpu['names']))} "
                f"(compute capability {gpu.get('compute_capability')}); one arch per deployment.",
                "deploy on a host with one GPU model: the check reads every GPU nvidia-smi lists, so hiding some "
                "from the engine (CUDA_VISIBLE_DEVICES) does not make the host uniform.",
            )
        )
    elif gpu.get("arch") is None:
        problems.append(
            Problem(
                "specgate_gpu",
                f"compute capability {gpu.get('compute_capability')} ({gpu['names'][0]}) has no specgate lane.",
                "deploy on SM90 (H100/H200), SM100 (B200), SM103 (B300) or SM120 (RTX PRO 6000) GPUs.",
            )
        )
    return problems


def check_host(dep: Deployment, host: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    free_by_path = {entry["path"]: entry["free_mib"] for entry in host.get("disk", [])}
    for path, minimum in sorted(dep.min_free_gib.items()):
        free_mib = free_by_path.get(path)
        if free_mib is not None and free_mib < minimum * MIB_PER_GIB:
            problems.append(
                Problem(
                    _var("min_free_gib"),
                    f"{path} has {free_mib / MIB_PER_GIB:.1f} GiB free; at least {minimum} GiB is required.",
                    f"free space on the filesystem holding {path}, or lower preflight_min_free_gib[{path!r}].",
                )
            )
    ram_mib = host.get("mem_total_mib")
    if dep.min_ram_gib and ram_mib is not None and ram_mib < dep.min_ram_gib * MIB_PER_GIB:
        problems.append(
            Problem(
                _var("min_ram_gib"),
                f"the host has {ram_mib / MIB_PER_GIB:.1f} GiB of RAM; at least {dep.min_ram_gib} GiB is required.",
                "use a host with more memory, or lower preflight_min_ram_gib.",
            )
        )
    os_label = f"{host.get('os_id')}{host.get('os_version_id')}"
    if dep.supported_os and os_label not in dep.supported_os:
        problems.append(
            Problem(
                _var("supported_os"),
                f"{os_label} is not a supported OS ({', '.join(dep.supported_os)}).",
                "deploy on a supported OS, or add it to preflight_supported_os once it is proven.",
            )
        )
    return problems


def check_deployment(dep: Deployment, gpu: dict[str, Any], host: dict[str, Any]) -> list[Problem]:
    """Every problem with this host for a deployment; empty when it can go ahead."""
    return [*check_gpus(dep, gpu), *check_host(dep, host)]


def problems_as_dicts(problems: list[Problem]) -> list[dict[str, str]]:
    return [asdict(problem) for problem in problems]


def failure_message(problems: list[Problem]) -> str:
    lines = [f"preflight refused the deployment ({len(problems)} problem(s)); nothing on the host was changed:"]
    lines += [f"- {problem}" for problem in problems]
    return "\n".join(lines)
