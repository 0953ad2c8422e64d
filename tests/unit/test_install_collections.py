"""The controller's bootstrap: collections are installed only when missing or at another version than pinned, from a
directory of tarballs offline when one is given (never falling back to the network), and the deploy-only Python set
holds what the controller-side code imports and none of the development tools."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install_collections.py"
_spec = importlib.util.spec_from_file_location("install_collections", SCRIPT)
install_collections = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_collections)


def _install_fake(root: Path, fqcn: str, version: str) -> None:
    namespace, name = fqcn.split(".")
    target = root / "ansible_collections" / namespace / name
    target.mkdir(parents=True)
    (target / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": version}}))


def test_pinned_version_present_is_not_reinstalled(tmp_path: Path) -> None:
    _install_fake(tmp_path, "ansible.posix", "2.2.2")
    assert install_collections.missing_collections(tmp_path, [{"name": "ansible.posix", "version": "2.2.2"}]) == []


def test_other_version_or_absent_collection_is_missing(tmp_path: Path) -> None:
    _install_fake(tmp_path, "ansible.posix", "1.0.0")
    wanted = [{"name": "ansible.posix", "version": "2.2.2"}, {"name": "community.general", "version": "13.5.0"}]
    assert install_collections.missing_collections(tmp_path, wanted) == wanted


def test_project_collections_match_requirements() -> None:
    wanted = yaml.safe_load((ROOT / "requirements.yml").read_text())["collections"]
    assert install_collections.missing_collections(ROOT / "collections", wanted) == [], "run scripts/bootstrap"


# --- a directory of collection tarballs (the air-gapped path), with the real ansible-galaxy -----------------------

MODULE = "#!/usr/bin/python\nprint('hello')\n"


def _installed_collection(root: Path, fqcn: str, version: str, dependencies: dict | None = None) -> Path:
    """An installed collection as ansible-galaxy leaves one (MANIFEST.json, FILES.json, the files), except that
    FILES.json also lists a tests/ file that is absent, as in a copy out of the PyPI bundle."""
    namespace, name = fqcn.split(".")
    target = root / "ansible_collections" / namespace / name
    (target / "plugins" / "modules").mkdir(parents=True)
    files = {"README.md": f"# {fqcn}\n", "plugins/modules/hello.py": MODULE}
    for relative, text in files.items():
        (target / relative).write_text(text)
    (target / "plugins" / "modules" / "hello.py").chmod(0o755)

    def entry(relative: str, ftype: str, text: str | None = None) -> dict:
        digest = hashlib.sha256(text.encode()).hexdigest() if text is not None else None
        return {"name": relative, "ftype": ftype, "chksum_type": "sha256" if digest else None,
                "chksum_sha256": digest, "format": 1}

    listing = [entry(".", "dir"), entry("README.md", "file", files["README.md"]), entry("plugins", "dir"),
               entry("plugins/modules", "dir"), entry("plugins/modules/hello.py", "file", MODULE),
               entry("tests", "dir"), entry("tests/test_hello.py", "file", "assert True\n")]
    files_json = json.dumps({"files": listing, "format": 1}, indent=True)
    (target / "FILES.json").write_text(files_json)
    manifest = {
        "collection_info": {"namespace": namespace, "name": name, "version": version, "authors": ["specgate"],
                            "readme": "README.md", "tags": [], "description": "test", "license": [],
                            "license_file": None, "dependencies": dependencies or {}, "repository": None,
                            "documentation": None, "homepage": None, "issues": None},
        "file_manifest_file": {"name": "FILES.json", "ftype": "file", "chksum_type": "sha256",
                               "chksum_sha256": hashlib.sha256(files_json.encode()).hexdigest(), "format": 1},
        "format": 1,
    }
    (target / "MANIFEST.json").write_text(json.dumps(manifest, indent=True))
    return target


def _tarball_dir(tmp_path: Path, collections: dict[str, str], dependencies: dict | None = None) -> Path:
    """A directory of tarballs packed (scripts/install_collections.py --pack) from installed fake collections."""
    installed = tmp_path / "source"
    for fqcn, version in collections.items():
        _installed_collection(installed, fqcn, version, (dependencies or {}).get(fqcn))
    wanted = [{"name": fqcn, "version": version} for fqcn, version in collections.items()]
    dist = tmp_path / "dist"
    install_collections.pack_dir(installed, wanted, dist)
    return dist


def _requirements(tmp_path: Path, collections: dict[str, str]) -> Path:
    path = tmp_path / "requirements.yml"
    path.write_text(yaml.safe_dump({"collections": [{"name": n, "version": v} for n, v in collections.items()]}))
    return path


def test_packed_tarball_installs_offline_with_the_real_ansible_galaxy(tmp_path: Path) -> None:
    dist = _tarball_dir(tmp_path, {"specgate_test.fake": "1.2.3"})
    assert sorted(p.name for p in dist.iterdir()) == ["requirements.yml", "specgate_test-fake-1.2.3.tar.gz"]
    target = tmp_path / "collections"
    notes = install_collections.install_from_dir(
        target, [{"name": "specgate_test.fake", "version": "1.2.3"}], dist, "SPECGATE_COLLECTIONS_DIR")
    assert notes == []
    assert install_collections.installed_version(target, "specgate_test.fake") == "1.2.3"
    installed = target / "ansible_collections" / "specgate_test" / "fake"
    assert (installed / "plugins" / "modules" / "hello.py").read_text() == MODULE
    assert os.access(installed / "plugins" / "modules" / "hello.py", os.X_OK)
    # FILES.json lists what the tarball holds, and MANIFEST.json's checksum of it follows
    manifest = json.loads((installed / "MANIFEST.json").read_text())
    files_json = (installed / "FILES.json").read_bytes()
    assert manifest["file_manifest_file"]["chksum_sha256"] == hashlib.sha256(files_json).hexdigest()
    assert "tests/test_hello.py" not in {e["name"] for e in json.loads(files_json)["files"]}


def test_the_directory_installs_by_hand_as_ansible_galaxy_documents(tmp_path: Path) -> None:
    """The directory's requirements.yml (what `ansible-galaxy collection download` writes) works on its own."""
    dist = _tarball_dir(tmp_path, {"specgate_test.fake": "1.2.3"})
    galaxy = install_collections.ansible_galaxy()
    done = subprocess.run([galaxy, "collection", "install", "--offline", "-r", "requirements.yml",
                           "-p", str(tmp_path / "by-hand")], cwd=dist, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert install_collections.installed_version(tmp_path / "by-hand", "specgate_test.fake") == "1.2.3"


def test_project_collection_packs_into_an_artifact_that_installs_offline(tmp_path: Path) -> None:
    """The real ./collections copy (out of Galaxy or the PyPI bundle) packs into an installable tarball."""
    pinned = {c["name"]: c for c in yaml.safe_load((ROOT / "requirements.yml").read_text())["collections"]}
    posix = pinned["ansible.posix"]
    tarball = install_collections.pack_installed(ROOT / "collections", posix, tmp_path / "dist")
    assert tarball.name == f"ansible-posix-{posix['version']}.tar.gz"
    target = tmp_path / "collections"
    install_collections.install_from_dir(target, [posix], tmp_path / "dist", "--from-dir")
    assert install_collections.installed_version(target, "ansible.posix") == str(posix["version"])
    source = ROOT / "collections" / "ansible_collections" / "ansible" / "posix"
    installed = target / "ansible_collections" / "ansible" / "posix"
    for relative in ("plugins/modules/sysctl.py", "plugins/callback/profile_tasks.py"):
        assert (installed / relative).read_bytes() == (source / relative).read_bytes()


def test_second_run_from_the_directory_is_a_no_op(tmp_path: Path, monkeypatch, capsys) -> None:
    pins = {"specgate_test.fake": "1.2.3", "specgate_test.other": "0.1.0"}
    dist = _tarball_dir(tmp_path, pins)
    args = ["--requirements-file", str(_requirements(tmp_path, pins)), "--collections-path", str(tmp_path / "c")]
    monkeypatch.delenv("SPECGATE_COLLECTIONS_SOURCE", raising=False)
    monkeypatch.setenv("SPECGATE_COLLECTIONS_DIR", str(dist))
    assert install_collections.main(args) == 0
    assert "installed 2 offline" in capsys.readouterr().out
    assert install_collections.installed_version(tmp_path / "c", "specgate_test.other") == "0.1.0"

    def no_subprocess(*_args, **_kwargs):
        raise AssertionError("a second run must not run ansible-galaxy or pip")

    monkeypatch.setattr(install_collections.subprocess, "run", no_subprocess)
    assert install_collections.main(args) == 0
    assert capsys.readouterr().out == "collections: up to date\n"


def test_a_directory_lacking_a_pinned_collection_fails_naming_the_variable(tmp_path: Path) -> None:
    dist = _tarball_dir(tmp_path, {"specgate_test.fake": "1.2.3"})
    requirements = _requirements(tmp_path, {"specgate_test.fake": "1.2.4", "specgate_test.absent": "2.0.0"})
    env = {**os.environ, "SPECGATE_COLLECTIONS_DIR": str(dist)}
    env.pop("SPECGATE_COLLECTIONS_SOURCE", None)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--requirements-file", str(requirements),
         "--collections-path", str(tmp_path / "c")], env=env, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert f"SPECGATE_COLLECTIONS_DIR={dist} lacks the pinned" in done.stderr
    assert "specgate_test.fake 1.2.4 (it has 1.2.3)" in done.stderr
    assert "specgate_test.absent 2.0.0" in done.stderr
    assert "unavailable" not in done.stderr, "no other source is tried"
    assert "installed" not in done.stdout
    assert not (tmp_path / "c").exists(), "nothing is installed, from the directory or elsewhere"


def test_a_missing_directory_fails_naming_the_flag(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SPECGATE_COLLECTIONS_SOURCE", raising=False)
    requirements = _requirements(tmp_path, {"specgate_test.fake": "1.2.3"})
    with pytest.raises(SystemExit, match=r"--from-dir=\S*nowhere is not a directory"):
        install_collections.main(["--from-dir", str(tmp_path / "nowhere"), "--requirements-file", str(requirements),
                                  "--collections-path", str(tmp_path / "c")])


def test_the_directory_and_another_source_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as raised:
        install_collections.main(["--from-dir", str(tmp_path), "--source", "pypi"])
    assert raised.value.code == 2


def test_dependencies_the_directory_holds_are_installed_and_absent_ones_named(tmp_path: Path) -> None:
    dist = _tarball_dir(tmp_path, {"specgate_test.fake": "1.2.3", "specgate_test.dep": "0.4.0"},
                        {"specgate_test.fake": {"specgate_test.dep": ">=0.1.0", "specgate_test.gone": "*"}})
    target = tmp_path / "c"
    notes = install_collections.install_from_dir(
        target, [{"name": "specgate_test.fake", "version": "1.2.3"}], dist, "SPECGATE_COLLECTIONS_DIR")
    assert install_collections.installed_version(target, "specgate_test.dep") == "0.4.0"
    assert notes == [f"specgate_test.fake depends on specgate_test.gone, which {dist} does not hold: not installed"]


def test_pack_refuses_an_installed_file_that_differs_from_its_checksum(tmp_path: Path) -> None:
    installed = _installed_collection(tmp_path / "source", "specgate_test.fake", "1.2.3")
    (installed / "README.md").write_text("edited\n")
    with pytest.raises(SystemExit, match=r"README\.md differs from its checksum"):
        install_collections.pack_dir(tmp_path / "source", [{"name": "specgate_test.fake", "version": "1.2.3"}],
                                     tmp_path / "dist")


def test_pack_refuses_a_collection_not_installed_at_its_pin(tmp_path: Path) -> None:
    _installed_collection(tmp_path / "source", "specgate_test.fake", "1.2.3")
    with pytest.raises(SystemExit, match=r"specgate_test.fake 1.2.4 is not installed .* \(found 1.2.3\)"):
        install_collections.pack_dir(tmp_path / "source", [{"name": "specgate_test.fake", "version": "1.2.4"}],
                                     tmp_path / "dist")


def test_download_packs_the_installed_collections_when_galaxy_fails(tmp_path: Path, monkeypatch) -> None:
    _installed_collection(tmp_path / "source", "specgate_test.fake", "1.2.3")
    failing = tmp_path / "ansible-galaxy"
    failing.write_text("#!/bin/sh\necho 'ERROR! galaxy is unreachable' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(install_collections, "ansible_galaxy", lambda: str(failing))
    pins = {"specgate_test.fake": "1.2.3"}
    source = install_collections.download_dir(_requirements(tmp_path, pins), tmp_path / "source",
                                              [{"name": "specgate_test.fake", "version": "1.2.3"}], tmp_path / "dl")
    assert source == str(tmp_path / "source")
    assert yaml.safe_load((tmp_path / "dl" / "requirements.yml").read_text()) == {
        "collections": [{"name": "specgate_test-fake-1.2.3.tar.gz", "version": "1.2.3"}]}
    assert install_collections.tarball_info(tmp_path / "dl" / "specgate_test-fake-1.2.3.tar.gz")["version"] == "1.2.3"


# --- the Python requirement sets: requirements/deploy.txt is enough for the controller-side code ------------------

REQUIREMENTS = ROOT / "requirements"
# Development tools the deploy set must leave out (issue #18): they stay in the full set.
DEV_ONLY = {"molecule", "molecule-plugins", "transformers", "pytest", "pytest-testinfra", "ansible-lint", "yamllint",
            "ruff", "ansible-runner", "numpy", "safetensors", "openai", "setuptools"}
# Controller-side Python: plugins run inside ansible-playbook, and the collection installer bootstrap runs. Host-side
# code (library/, the module_utils a module ships) runs on the host's python3 and needs nothing here.
CONTROLLER_CODE = [*sorted((ROOT / "filter_plugins").glob("*.py")), *sorted((ROOT / "action_plugins").glob("*.py")),
                   SCRIPT]


def requirement_lines(path: Path) -> list[tuple[Requirement, Path]]:
    """The requirements of a pip requirements file and of the files it includes with -r, nested."""
    found = []
    for raw in path.read_text().splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        include = re.fullmatch(r"(?:-r|--requirement)[\s=]*(\S+)", line)
        if include:
            found += requirement_lines(path.parent / include.group(1))
        else:
            assert not line.startswith("-"), f"{path}: option {line!r} is not read here"
            found.append((Requirement(line), path))
    return found


def names(path: Path) -> set[str]:
    return {canonicalize_name(req.name) for req, _ in requirement_lines(path)}


def _optional(handlers: list[ast.ExceptHandler]) -> bool:
    caught = {ast.unparse(h.type) for h in handlers if h.type is not None}
    return bool(caught & {"ImportError", "ModuleNotFoundError", "(ImportError, ModuleNotFoundError)"})


def required_imports(path: Path) -> list[tuple[str, int]]:
    """(module, level) of every import in the file, anywhere in it (a lazy import in a function is as needed),
    except those inside a `try` that catches ImportError (the code runs without them)."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, optional: bool) -> None:
        if isinstance(node, ast.Try):
            for child in node.body:
                visit(child, optional or _optional(node.handlers))
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, optional)
            return
        if not optional and isinstance(node, ast.Import):
            found.extend((alias.name, 0) for alias in node.names)
        elif not optional and isinstance(node, ast.ImportFrom):
            found.extend((f"{node.module or ''}:{alias.name}", node.level) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, optional)

    visit(ast.parse(path.read_text()), False)
    return found


def third_party_imports(entry_points: list[Path], module_utils: Path) -> dict[str, set[str]]:
    """Top-level third-party modules the entry points need, following their imports of the project's module_utils
    (as ansible.module_utils.specgate.* or relative) and of its own collection (ansible_collections.specgate.*, in
    local_collections/ beside module_utils/), with the files that import each."""
    local_collections = module_utils.parent / "local_collections"
    needed: dict[str, set[str]] = {}
    seen: set[Path] = set()
    todo = list(entry_points)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for spec, level in required_imports(path):
            module, _, imported = spec.partition(":")
            if level:  # relative: module_utils' own package
                base = path.parent
                for _ in range(level - 1):
                    base = base.parent
                parts = [*module.split(".")] if module else []
                todo += [p for p in (base.joinpath(*parts).with_suffix(".py"),
                                     base.joinpath(*parts, f"{imported}.py")) if p.is_file()]
                continue
            # The project's own packages are followed into their files: module_utils (ansible.module_utils.specgate)
            # and the project collection (ansible_collections.specgate, under local_collections/).
            own = [(root, module.split(".")[skip:]) for prefix, root, skip in
                   (("ansible.module_utils.specgate", module_utils, 2),
                    ("ansible_collections.specgate.", local_collections, 0)) if module.startswith(prefix)]
            if own:
                ((root, parts),) = own
                candidates = [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
                if imported:
                    candidates.append(root.joinpath(*parts, f"{imported}.py"))
                todo += [p for p in candidates if p.is_file()]
                continue
            top = module.split(".")[0]
            if top and top not in sys.stdlib_module_names:
                needed.setdefault(top, set()).add("/".join(path.parts[-2:]))
    return needed


def providers(module: str) -> set[str]:
    """The distributions (installed here, where the full set is) that provide a top-level module."""
    return {canonicalize_name(d) for d in importlib.metadata.packages_distributions().get(module, [])}


def test_the_full_set_includes_the_deploy_set_and_pins_nothing_twice() -> None:
    full = (REQUIREMENTS / "controller.txt").read_text()
    assert re.search(r"^-r deploy\.txt$", full, re.M), "requirements/controller.txt includes the deploy set"
    own = [canonicalize_name(req.name) for req, path in requirement_lines(REQUIREMENTS / "controller.txt")
           if path.name == "controller.txt"]
    assert not set(own) & names(REQUIREMENTS / "deploy.txt"), "a pin lives in one file"
    assert len(own) == len(set(own))


def test_the_deploy_set_leaves_out_the_development_tools() -> None:
    deploy = names(REQUIREMENTS / "deploy.txt")
    assert not deploy & DEV_ONLY, sorted(deploy & DEV_ONLY)
    assert names(REQUIREMENTS / "controller.txt") >= DEV_ONLY, "the full set still has them"


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_the_deploy_set_pins_one_ansible_core_for_each_supported_python(python: str) -> None:
    env = {"python_version": python, "python_full_version": f"{python}.0"}
    cores = [req for req, _ in requirement_lines(REQUIREMENTS / "deploy.txt")
             if req.name == "ansible-core" and (req.marker is None or req.marker.evaluate(env))]
    assert len(cores) == 1, cores
    assert cores[0].specifier.contains("2.19.14" if python == "3.11" else "2.21.5")


def test_every_package_in_the_sets_is_pinned() -> None:
    for req, path in requirement_lines(REQUIREMENTS / "controller.txt"):
        assert [spec.operator for spec in req.specifier] == ["=="], f"{path.name}: {req}"


def test_the_deploy_set_provides_every_controller_side_import() -> None:
    needed = third_party_imports(CONTROLLER_CODE, ROOT / "module_utils")
    # the scan reaches into module_utils: the gate filter's benchmark settings check pulls aiohttp in
    assert {"ansible", "yaml", "aiohttp"} <= set(needed), needed
    assert "gate/bench_client.py" in needed["aiohttp"], needed["aiohttp"]
    # and into the project's collection: the plugins' one import that puts module_utils on the path
    assert "module_utils/paths.py" in needed["ansible"], needed["ansible"]
    deploy = names(REQUIREMENTS / "deploy.txt")
    unprovided = {module: sorted(where) for module, where in needed.items() if not providers(module) & deploy}
    assert not unprovided, f"requirements/deploy.txt provides no package for {unprovided}"


def test_the_import_scan_follows_module_utils_and_skips_optional_imports(tmp_path: Path) -> None:
    """The scan above must be able to fail: a plugin's module_utils import that needs numpy is found, through an
    absolute and a relative import and inside a function; an import guarded by ImportError is not."""
    (tmp_path / "filter_plugins").mkdir()
    utils = tmp_path / "module_utils" / "specgate" / "gate"
    utils.mkdir(parents=True)
    (tmp_path / "filter_plugins" / "f.py").write_text(
        "import json\nfrom ansible.errors import AnsibleFilterError\n"
        "from ansible.module_utils.specgate.gate.first import thing\n")
    (utils / "first.py").write_text("from .second import other\ntry:\n    import orjson\nexcept ImportError:\n"
                                    "    orjson = None\n")
    (utils / "second.py").write_text("def other():\n    import numpy\n    return numpy\n")
    needed = third_party_imports([tmp_path / "filter_plugins" / "f.py"], tmp_path / "module_utils")
    assert set(needed) == {"ansible", "numpy"}, needed
    assert needed["numpy"] == {"gate/second.py"}
    assert providers("numpy") == {"numpy"}
    assert not providers("numpy") & names(REQUIREMENTS / "deploy.txt")
