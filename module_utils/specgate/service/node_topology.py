"""One SGLang deployment over several hosts: which host is which node rank, and the flags each node runs with.

A multi-node deployment is an inventory group (sglang_service_nodes_group) whose hosts are its nodes. Node rank is
the group's inventory order unless every node sets sglang_service_node_rank. SGLang 0.5.23's flags
(srt/arg_groups/fields/parallel.py): --nnodes, --node-rank, --dist-init-addr HOST:PORT (rank 0's address; rank 0
hosts the torch.distributed rendezvous there), --dist-timeout (seconds, int > 0:
srt/distributed/parallel_state.py::init_distributed_environment asserts it) and --gated-launch-port
(srt/distributed/gated_launch.py: every rank blocks after the process group forms until POST /gate/activate reaches
that port on rank 0's host; the control server starts only once all nodes joined).

Every node must run the same release (same id), so the flags split in two: `group_flags` are the same on every node
and may go into the release's --config; `rank_flags` (--node-rank) differ per node and belong on the unit's command
line (SGLang's CLI wins over --config: srt/utils/server_args_config_parser.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.specgate.common.engine import SglangConfigError, parse_sglang_version
from ansible.module_utils.specgate.common.http import host_port

PREFIX = "sglang_service_"


def _var(name: str) -> str:
    return PREFIX + name


@dataclass(frozen=True)
class NodeSettings:
    """The sglang_service_* multi-node inputs (names without the prefix)."""

    nodes_group: str | None = None
    dist_init_host: str | None = None
    dist_init_port: int = 25000
    dist_timeout: int | None = 3600
    gated_launch_port: int | None = 25100
    port: int = 30000


@dataclass(frozen=True)
class Topology:
    """The nodes of one deployment in rank order, and where rank 0 runs the rendezvous."""

    group: str
    nodes: tuple[str, ...]
    dist_init_addr: str
    dist_timeout: int | None
    gated_launch_port: int | None

    @property
    def nnodes(self) -> int:
        return len(self.nodes)

    def rank_of(self, host: str) -> int:
        if host not in self.nodes:
            raise SglangConfigError(
                f"{_var('nodes_group')}: {host} is not a node of group {self.group!r} ({', '.join(self.nodes)}). "
                f"Fix: add {host} to the group, or set {_var('nodes_group')} only on the group's hosts"
            )
        return self.nodes.index(host)

    @property
    def rank0(self) -> str:
        return self.nodes[0]

    @property
    def rendezvous(self) -> tuple[str, int]:
        """--dist-init-addr as (host, port): where a node's connection to rank 0 goes (an IPv6 host unbracketed)."""
        host, _, port = self.dist_init_addr.rpartition(":")
        return host.removeprefix("[").removesuffix("]"), int(port)


_TEXT_SETTINGS = ("nodes_group", "dist_init_host")
_NULLABLE_SETTINGS = ("dist_timeout", "gated_launch_port")


def _whole_number(name: str, value: Any) -> int:
    if not isinstance(value, bool):
        try:
            return int(str(value).strip())
        except ValueError:
            pass
    raise SglangConfigError(f"{_var(name)}: {value!r} is not a whole number. Fix: set {_var(name)} to one")


def settings_from_vars(raw: Mapping[str, Any]) -> NodeSettings:
    """NodeSettings from the role's variables (names without the prefix) as Ansible templates them: whole numbers may
    arrive as strings, and an empty value as ''; a value that is not a whole number is refused naming its variable."""
    values: dict[str, Any] = {}
    for name in NodeSettings.__dataclass_fields__:
        if name not in raw:
            continue
        value = raw[name]
        if name in _TEXT_SETTINGS:
            values[name] = None if value in (None, "") else str(value)
        elif name in _NULLABLE_SETTINGS and value in (None, ""):
            values[name] = None
        else:
            values[name] = _whole_number(name, value)
    return NodeSettings(**values)


def _explicit_rank(host: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise SglangConfigError(
            f"{_var('node_rank')}: {host} sets {value!r}, not a node rank. "
            f"Fix: set {_var('node_rank')} to a whole number from 0 (rank 0 serves the API), or leave it unset on "
            "every node to rank them in inventory order"
        )
    return int(value)


def node_ranks(group: str, hosts: Sequence[str], explicit: Mapping[str, Any]) -> tuple[str, ...]:
    """The group's hosts in node-rank order: inventory order, or sglang_service_node_rank when every node sets it.

    `explicit` maps a host to its sglang_service_node_rank (None or absent: unset). Setting it on some nodes only
    is refused: the rest would get ranks nobody chose.
    """
    if len(hosts) != len(set(hosts)):
        raise SglangConfigError(f"{_var('nodes_group')}: group {group!r} lists a host twice ({', '.join(hosts)})")
    if len(hosts) < 2:
        raise SglangConfigError(
            f"{_var('nodes_group')}: group {group!r} has {len(hosts)} host(s); a multi-node deployment needs at "
            f"least 2. Fix: add the other nodes to the group, or set {_var('nodes_group')} to null to serve from "
            "one host"
        )
    chosen = {host: explicit.get(host) for host in hosts if explicit.get(host) is not None}
    if not chosen:
        return tuple(hosts)
    unset = [host for host in hosts if host not in chosen]
    if unset:
        raise SglangConfigError(
            f"{_var('node_rank')}: set on {', '.join(sorted(chosen))} but not on {', '.join(unset)} (group "
            f"{group!r}). Fix: set {_var('node_rank')} on every node of the group, or on none to rank them in "
            "inventory order"
        )
    ranks = {host: _explicit_rank(host, value) for host, value in chosen.items()}
    expected = set(range(len(hosts)))
    if set(ranks.values()) != expected or len(set(ranks.values())) != len(hosts):
        by_rank = ", ".join(f"{host}={rank}" for host, rank in sorted(ranks.items(), key=lambda item: item[1]))
        raise SglangConfigError(
            f"{_var('node_rank')}: the ranks of group {group!r} ({by_rank}) are not 0..{len(hosts) - 1}, each once. "
            f"Fix: give the {len(hosts)} nodes the ranks 0 to {len(hosts) - 1}, one each"
        )
    return tuple(sorted(hosts, key=lambda host: ranks[host]))


def _port(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise SglangConfigError(f"{_var(name)}: {value!r} is not a TCP port. Fix: set a port from 1 to 65535")
    return value


def topology(
    settings: NodeSettings, hosts: Sequence[str], explicit_ranks: Mapping[str, Any], addresses: Mapping[str, str]
) -> Topology:
    """The deployment's nodes and rendezvous. `hosts` is the group in inventory order, `explicit_ranks` each host's
    sglang_service_node_rank, `addresses` the address each host is reached at (ansible_host, or its inventory name);
    sglang_service_dist_init_host, when set, is rank 0's address instead."""
    group = settings.nodes_group
    if not group:
        raise SglangConfigError(f"{_var('nodes_group')}: not set; a single-host deployment has no node topology")
    nodes = node_ranks(group, hosts, explicit_ranks)
    init_port = _port("dist_init_port", settings.dist_init_port)
    service_port = _port("port", settings.port)
    if init_port == service_port:
        raise SglangConfigError(
            f"{_var('dist_init_port')}: {init_port} is also {_var('port')}; rank 0 serves the API there and the "
            f"rendezvous cannot share it. Fix: choose another {_var('dist_init_port')}"
        )
    gated = settings.gated_launch_port
    if gated is not None:
        _port("gated_launch_port", gated)
        if gated in (init_port, service_port):
            raise SglangConfigError(
                f"{_var('gated_launch_port')}: {gated} is already {_var('dist_init_port')} or {_var('port')}. "
                f"Fix: choose a free port for {_var('gated_launch_port')} (null turns the gated launch off)"
            )
    timeout = settings.dist_timeout
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1):
        raise SglangConfigError(
            f"{_var('dist_timeout')}: {timeout!r} is not a whole number of seconds above 0 (SGLang asserts it: "
            f"srt/distributed/parallel_state.py). Fix: set it to e.g. 3600, or null for PyTorch's default"
        )
    host0 = settings.dist_init_host or addresses.get(nodes[0]) or nodes[0]
    return Topology(group, nodes, host_port(str(host0), init_port), timeout, gated)


def group_flags(topo: Topology, sglang_version: str) -> dict[str, Any]:
    """Flags every node runs with (rendered into the release's --config: the release id stays one for all nodes).
    --gated-launch-port only for an SGLang that has it (VersionRules.gated_launch)."""
    target = parse_sglang_version(sglang_version)
    flags: dict[str, Any] = {"nnodes": topo.nnodes, "dist-init-addr": topo.dist_init_addr}
    if topo.dist_timeout is not None:
        flags["dist-timeout"] = topo.dist_timeout
    if topo.gated_launch_port is not None and target.rules.gated_launch:
        flags["gated-launch-port"] = topo.gated_launch_port
    return flags


def rank_flags(topo: Topology, host: str) -> dict[str, Any]:
    """The flag that differs per node; on the unit's command line, so the release's config stays the same."""
    return {"node-rank": topo.rank_of(host)}


def node_flags(topo: Topology, host: str, sglang_version: str) -> dict[str, Any]:
    """Everything one node runs with beyond the single-host config."""
    return {**group_flags(topo, sglang_version), **rank_flags(topo, host)}



@dataclass(frozen=True)
class Replica:
    """One deployment as the fleet sees it: a single host (a node group of one, named after the host) or a node
    group (named after its inventory group), its nodes in rank order. Rank 0 serves the API: it is what a router
    knows and what a gate, a drain or a bake asks."""

    name: str
    nodes: tuple[str, ...]

    @property
    def rank0(self) -> str:
        return self.nodes[0]

    @property
    def label(self) -> str:
        """How a message names it: the host, or the group with its nodes (``pair (n1, n2)``)."""
        return self.name if self.nodes == (self.name,) else f"{self.name} ({', '.join(self.nodes)})"


def replicas(
    hosts: Sequence[str], settings_of: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Sequence[str]]
) -> list[Replica]:
    """The deployments ``hosts`` belong to, in the order their first host comes in ``hosts``. A host without
    sglang_service_nodes_group is a replica of its own; a node group is one replica of all its inventory group's
    members in rank order (node_ranks), wherever they stand and whether or not all of them are in ``hosts``.
    ``settings_of`` maps a host to its variables (sglang_service_nodes_group, sglang_service_node_rank); a host it
    lacks has neither. A group's ranks that cannot hold are refused (SglangConfigError, naming the variable)."""
    out: dict[str, Replica] = {}
    for host in hosts:
        group = (settings_of.get(host) or {}).get(_var("nodes_group"))
        if not group:
            out.setdefault(host, Replica(host, (host,)))
            continue
        if group in out:
            continue
        members = list(groups.get(group) or [])
        ranks = {member: (settings_of.get(member) or {}).get(_var("node_rank")) for member in members}
        out[group] = Replica(str(group), node_ranks(str(group), members, ranks))
    return list(out.values())
