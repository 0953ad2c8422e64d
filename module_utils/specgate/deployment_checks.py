"""Check a requested deployment as a whole against the host, before anything on the host changes.

argument_specs checks each variable alone (type, choices); this checks how they fit the host: parallel sizes
vs GPU count, attention backends vs SM arch, CUDA toolkit vs arch and SGLang release, driver vs toolkit, disk,
RAM, OS. Every problem names the variable to change and how. What SGLang's flags allow together (DFLASH needs
pp 1, attention-DP needs the DP LM head, DDTREE needs the patched install) is the renderer's rule
(sglang_flags), judged once, by sglang_service's settings entry point right after preflight.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ansible.module_utils.specgate.cuda_lanes import (
    CUDA_MINIMUM_BY_ARCH,
    cuda_lane_for_sglang,
    cuda_meets_minimum,
    parse_version,
)
from ansible.module_utils.specgate.sglang_flags import SglangConfigError, parse_sglang_version

# Backends that assert an arch at start-up (fa3: SM 80-90; trtllm-gen kernels: SM100 family only).
BACKEND_ARCHES: dict[str, frozenset[str]] = {
    "fa3": frozenset({"sm90"}),
    "trtllm_mla": frozenset({"sm100", "sm103"}),
    "trtllm_mha": frozenset({"sm100", "sm103"}),
}
DEFAULT_BACKEND_HINT: dict[str, str] = {
    "sm90": "fa3",
    "sm100": "trtllm_mla",
    "sm103": "trtllm_mla",
    "sm120": "triton",
}
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
    tp_size: int = 1
    pp_size: int = 1
    ep_size: int = 1
    dp_size: int = 1
    attn_dp_size: int = 1
    nnodes: int = 1
    attention_backend: str | None = None
    draft_attention_backend: str | None = None
    sglang_version: str = "0.5.23"
    cuda_version: str = "13.0"
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
                "limit the host to one GPU model (CUDA_VISIBLE_DEVICES in the service environment) "
                "or use another host.",
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


def check_parallel(dep: Deployment, gpu: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    sizes = {
        "tp_size": dep.tp_size,
        "pp_size": dep.pp_size,
        "ep_size": dep.ep_size,
        "dp_size": dep.dp_size,
        "attn_dp_size": dep.attn_dp_size,
        "nnodes": dep.nnodes,
    }
    bad = {name: value for name, value in sizes.items() if value < 1}
    for name, value in bad.items():
        problems.append(
            Problem(_var(name), f"is {value}; parallel sizes count processes.", f"set {_var(name)} to 1 or more.")
        )
    if bad:
        return problems
    world = dep.tp_size * dep.pp_size * dep.dp_size
    if world % dep.nnodes:
        problems.append(
            Problem(
                _var("nnodes"),
                f"tp_size x pp_size x dp_size = {world} GPUs cannot be split evenly over {dep.nnodes} nodes.",
                f"make preflight_tp_size x preflight_pp_size x preflight_dp_size a multiple of {dep.nnodes}.",
            )
        )
    elif gpu.get("has_gpus") and world // dep.nnodes > int(gpu.get("count") or 0):
        problems.append(
            Problem(
                _var("tp_size"),
                f"tp_size {dep.tp_size} x pp_size {dep.pp_size} x dp_size {dep.dp_size} over {dep.nnodes} node(s) "
                f"needs {world // dep.nnodes} GPUs per node; this host has {gpu.get('count')}.",
                f"lower preflight_tp_size/preflight_pp_size/preflight_dp_size so their product per node is at most "
                f"{gpu.get('count')}, or add nodes (preflight_nnodes).",
            )
        )
    if dep.tp_size % dep.ep_size:
        problems.append(
            Problem(
                _var("ep_size"),
                f"ep_size {dep.ep_size} does not divide tp_size {dep.tp_size}; experts are split inside the TP group.",
                f"set preflight_ep_size to a divisor of {dep.tp_size} (1 disables expert parallelism).",
            )
        )
    if dep.tp_size % dep.attn_dp_size:
        problems.append(
            Problem(
                _var("attn_dp_size"),
                f"attn_dp_size {dep.attn_dp_size} does not divide tp_size {dep.tp_size}.",
                f"set preflight_attn_dp_size to a divisor of {dep.tp_size}.",
            )
        )
    return problems


def check_sglang_version(dep: Deployment) -> list[Problem]:
    """The renderer's own rule for supported SGLang versions (sglang_flags.parse_sglang_version), judged first:
    a pin the service stage would refuse must be refused before CUDA, the venv and the weights change the host."""
    try:
        parse_sglang_version(dep.sglang_version)
    except SglangConfigError as error:
        reason = str(error).removeprefix("sglang_service_sglang_version: ")
        return [
            Problem(
                _var("sglang_version"),
                f"{reason}.",
                "pin a supported SGLang release in sglang_env_packages (sglang==X.Y.Z) and, if set, "
                "sglang_service_sglang_version (for a git source, set sglang_service_sglang_version to the release "
                "its ref builds).",
            )
        ]
    return []


def effective_arch(gpu: dict[str, Any], assume_arch: str | None) -> str | None:
    """The GPUs' arch; on a host declared GPU-less, the arch it stands in for (e.g. a test container)."""
    return gpu.get("arch") if gpu.get("has_gpus") else assume_arch


def check_backends(dep: Deployment, gpu: dict[str, Any], arch: str | None) -> list[Problem]:
    if arch is None:
        return []
    what = f"{arch.upper()} ({gpu['names'][0]})" if gpu.get("has_gpus") else f"{arch.upper()} (preflight_assume_arch)"
    problems: list[Problem] = []
    for name in ("attention_backend", "draft_attention_backend"):
        backend = getattr(dep, name)
        allowed = BACKEND_ARCHES.get(backend or "")
        if allowed is not None and arch not in allowed:
            problems.append(
                Problem(
                    _var(name),
                    f"{backend} runs only on {'/'.join(sorted(allowed)).upper()}; this host's GPUs are {what}.",
                    f"set {_var(name)} to {DEFAULT_BACKEND_HINT[arch]!r} (SGLang's choice on {arch.upper()}) "
                    "or leave it empty for SGLang's default.",
                )
            )
    return problems


def check_versions(dep: Deployment, gpu: dict[str, Any], arch: str | None) -> list[Problem]:
    problems: list[Problem] = []
    try:
        cuda = parse_version(dep.cuda_version, 2)
    except ValueError:
        return [Problem(_var("cuda_version"), f"{dep.cuda_version!r} is not MAJOR.MINOR.", "set it like '13.0'.")]
    try:
        lane = cuda_lane_for_sglang(parse_sglang_version(dep.sglang_version).release)
    except (ValueError, SglangConfigError):
        problems.append(
            Problem(_var("sglang_version"), f"{dep.sglang_version!r} is not a release number.", "pin it like '0.5.23'.")
        )
    else:
        if cuda[0] not in lane.allowed_majors:
            problems.append(
                Problem(
                    _var("cuda_version"),
                    f"CUDA {dep.cuda_version} does not match the SGLang lane: {lane.reason}.",
                    f"set preflight_cuda_version to a CUDA {'/'.join(map(str, lane.allowed_majors))}.x toolkit "
                    "(13.0 for SGLang 0.5.23), or pin an SGLang release of the CUDA 12 lane (<= 0.5.19).",
                )
            )
    if arch in CUDA_MINIMUM_BY_ARCH and not cuda_meets_minimum(arch, dep.cuda_version):
        problems.append(
            Problem(
                _var("cuda_version"),
                f"CUDA {dep.cuda_version} cannot compile for {arch.upper()}; it needs at least "
                f"{CUDA_MINIMUM_BY_ARCH[arch]} (FlashInfer's JIT rejects the arch otherwise).",
                f"set preflight_cuda_version to {CUDA_MINIMUM_BY_ARCH[arch]} or newer.",
            )
        )
    driver_cuda = gpu.get("cuda_driver_version")
    if gpu.get("has_gpus") and driver_cuda:
        try:
            driver_major = parse_version(driver_cuda, 2)[0]
        except ValueError:
            driver_major = None
        if driver_major is not None and driver_major < cuda[0]:
            problems.append(
                Problem(
                    _var("cuda_version"),
                    f"the driver ({gpu.get('driver_version')}) supports CUDA {driver_cuda}; a CUDA {dep.cuda_version} "
                    "toolkit's binaries will not load on it.",
                    f"upgrade the NVIDIA driver to one that supports CUDA {cuda[0]} (580 or newer for CUDA 13), "
                    "or lower preflight_cuda_version to the driver's major.",
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


def check_deployment(
    dep: Deployment, gpu: dict[str, Any], host: dict[str, Any], assume_arch: str | None = None
) -> list[Problem]:
    """Every problem with the requested deployment on this host; empty when it can go ahead."""
    arch = effective_arch(gpu, assume_arch)
    unsupported = check_sglang_version(dep)
    if unsupported:
        # Judged first and alone among the version checks: the lane check presumes a supported release.
        return [
            *unsupported,
            *check_gpus(dep, gpu),
            *check_parallel(dep, gpu),
            *check_backends(dep, gpu, arch),
            *check_host(dep, host),
        ]
    return [
        *check_gpus(dep, gpu),
        *check_parallel(dep, gpu),
        *check_backends(dep, gpu, arch),
        *check_versions(dep, gpu, arch),
        *check_host(dep, host),
    ]


def in_users_words(problems: list[Problem], sources: dict[str, str]) -> list[Problem]:
    """Name the variables the user set: the playbook feeds preflight_* from the inventory's own names
    (sources maps preflight_tp_size → sglang_service_tp_size), so the message points at what to edit."""
    if not sources:
        return problems
    # Longest names first, so preflight_attention_backend is not half-replaced by a shorter name it contains.
    order = sorted(sources, key=len, reverse=True)

    def rename(text: str) -> str:
        for name in order:
            text = text.replace(name, sources[name])
        return text

    return [Problem(rename(p.variable), rename(p.message), rename(p.fix)) for p in problems]


def problems_as_dicts(problems: list[Problem]) -> list[dict[str, str]]:
    return [asdict(problem) for problem in problems]


def failure_message(problems: list[Problem]) -> str:
    lines = [f"preflight refused the deployment ({len(problems)} problem(s)); nothing on the host was changed:"]
    lines += [f"- {problem}" for problem in problems]
    return "\n".join(lines)
