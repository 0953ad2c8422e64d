"""Host-side code (library/, module_utils/) runs on the managed host's own python3: every file compiles and imports
on the Python running the tests (scripts/test_host_pythons runs this on 3.10 - 3.13), and every unit test module
says whether it belongs to the host set, so none drops out of that run unnoticed."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from host_set import CONTROLLER_ONLY, host_test_modules, marks_host, unit_test_modules
from test_import_direction import ORDER

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "library").glob("*.py"))
MODULE_UTILS = sorted((ROOT / "module_utils" / "specgate").rglob("*.py"))
# Stage packages whose code runs only on the controller, under its venv (requirements/deploy.txt), and why: no module
# in library/ imports them, so a host's python3 never needs what they import.
CONTROLLER_PACKAGES = {
    "sweep": "the sweep plans, picks and plots on the controller (jinja2 for constraints, matplotlib for the plots)",
    "env/pins.py": "reads sglang_env's package lines with packaging.requirements, which ansible-core brings",
    "env/sglang_env_plan.py": "plans the venv from the inventory alone (env/pins.py)",
    "monitor/textfile.py": "the textfile of what a host serves is rendered by a filter on the controller "
                           "(prometheus_client)",
    "monitor/scrape.py": "Prometheus's configuration is generated from the inventory by a filter on the controller",
    "fleet/timeline.py": "the rollout's timeline picture is drawn beside the fleet report, on the controller "
                         "(matplotlib)",
}
# Modules that run on the controller only (their DOCUMENTATION says so, and the roles call them with
# delegate_to: localhost), and why: only these may import a controller-only package.
CONTROLLER_MODULES = {
    "spec_sweep_state": "the sweep's rows and report live on the controller; it plans and plots there",
    "sglang_env_plan": "pure computation over the inventory; reads pins as pip does (packaging, env/pins.py)",
    "fleet_rollout_timeline": "draws the rollout's picture beside the fleet report on the controller (matplotlib)",
}
HOST_LIBRARY = [p for p in LIBRARY if p.stem not in CONTROLLER_MODULES]


def _controller_only(path: Path) -> bool:
    relative = path.relative_to(ROOT / "module_utils" / "specgate")
    return relative.parts[0] in CONTROLLER_PACKAGES or relative.as_posix() in CONTROLLER_PACKAGES


HOST_MODULE_UTILS = [p for p in MODULE_UTILS if not _controller_only(p)]
STAGE_PACKAGES = sorted(ORDER)  # the stages in the data flow's order: test_import_direction.py


def _dotted(path: Path) -> str:
    relative = path.relative_to(ROOT / "module_utils").with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return "ansible.module_utils." + ".".join(parts)


def test_module_utils_are_grouped_by_stage():
    """The folder shows the data flow: every file sits in its stage's package (or common/), none at the top."""
    top = sorted(p.name for p in (ROOT / "module_utils" / "specgate").glob("*.py"))
    assert top == ["__init__.py"], top
    packages = sorted(p.name for p in (ROOT / "module_utils" / "specgate").iterdir() if (p / "__init__.py").is_file())
    assert packages == STAGE_PACKAGES
    assert len(MODULE_UTILS) > 40, "the stage packages hold the logic"


@pytest.mark.parametrize("path", LIBRARY + MODULE_UTILS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_compiles_on_this_python(path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)


@pytest.mark.parametrize("path", HOST_MODULE_UTILS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_utils_import_on_this_python(path):
    importlib.import_module(_dotted(path))


@pytest.mark.parametrize("path", HOST_LIBRARY, ids=lambda p: p.name)
def test_modules_import_on_this_python(path):
    module = importlib.import_module(path.stem)  # tests/conftest.py puts library/ on sys.path
    assert callable(module.main)


def test_no_host_module_imports_a_controller_only_package():
    # A module runs on the host: importing a controller-side package would fail there on what that package needs.
    # The controller-only modules are the exception, each listed with its reason and checked below. Host-side
    # module_utils are held to it too: a host module imports them.
    for path in HOST_LIBRARY + HOST_MODULE_UTILS:
        for package, why in CONTROLLER_PACKAGES.items():
            dotted = package.removesuffix(".py").replace("/", ".")
            assert f"ansible.module_utils.specgate.{dotted}" not in path.read_text(encoding="utf-8"), (
                f"{path.name} imports specgate.{dotted}, which runs on the controller only: {why}")


def _documentation(path: Path) -> str:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            return ast.literal_eval(node.value)
    return ""


def test_controller_modules_say_they_run_on_the_controller_and_are_called_so():
    for name in CONTROLLER_MODULES:
        path = ROOT / "library" / f"{name}.py"
        assert path.is_file(), f"CONTROLLER_MODULES names {name}, which library/ does not hold"
        # Read, not imported: the module imports what only the controller has (a host's python3 runs this test too).
        assert "controller only" in _documentation(path), (
            f"{name}'s DOCUMENTATION must say it runs on the controller only")
        calls = [(task, text) for task in (ROOT / "roles").rglob("*.yml")
                 for text in [task.read_text(encoding="utf-8")] if f"{name}:" in text]
        assert calls, f"no role calls {name}"
        for task, text in calls:
            # every task that calls it delegates to the controller
            for block in re.split(r"\n\s*- name:", text):
                if f"{name}:" in block:
                    assert "delegate_to: localhost" in block, f"{task.relative_to(ROOT)}: {name} without delegate_to"


def test_every_unit_test_module_is_in_the_host_set_or_says_why_not():
    tests = unit_test_modules()
    unmarked = [p.stem for p in tests if not marks_host(p) and p.stem not in CONTROLLER_ONLY]
    assert not unmarked, f"mark these host (pytestmark = pytest.mark.host) or list them in CONTROLLER_ONLY: {unmarked}"
    both = [p.stem for p in tests if marks_host(p) and p.stem in CONTROLLER_ONLY]
    assert not both, f"marked host but listed as controller-only: {both}"
    gone = set(CONTROLLER_ONLY) - {p.stem for p in tests}
    assert not gone, f"CONTROLLER_ONLY names test modules that no longer exist: {sorted(gone)}"


def test_the_host_set_is_what_pytest_selects_with_the_marker(request):
    # The marker is what a module declares; the static reading (what scripts/test_host_pythons hands pytest)
    # must agree with pytest's own view of every collected module.
    collected = {item.path for item in request.session.items}
    marked = {item.path for item in request.session.items if item.get_closest_marker("host")}
    assert marked == {path for path in host_test_modules() if path in collected}
