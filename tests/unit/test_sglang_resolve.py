"""sglang_config_check's logic: run the resolver driver under another interpreter and read its answer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from ansible.module_utils.specgate.service.sglang_resolve import (
    ResolverUnavailable,
    check_config,
    mask_environment,
)
from specgate_sim.fixtures import dflash_config, target_config

SIM = "specgate_sim.server_args"


@pytest.fixture
def models(tmp_path):
    for name, config in (("target", target_config()), ("drafter", dflash_config(8, 2, [1, 2]))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    return tmp_path


def write_config(directory, **flags):
    path = directory / "server.yaml"
    path.write_text("".join(f"{key}: {value}\n" for key, value in flags.items()))
    return str(path)


def dflash_config_file(models, **extra):
    return write_config(models, **{"model-path": models / "target", "speculative-algorithm": "DFLASH",
                                   "speculative-draft-model-path": models / "drafter", **extra})


def test_accepted_config_returns_the_resolved_arguments(models):
    result = check_config(sys.executable, dflash_config_file(models, **{"speculative-dflash-block-size": 8}),
                          server_args_module=SIM)
    assert not result.rejected
    assert result.resolved["speculative_num_draft_tokens"] == 8
    assert result.resolved["max_running_requests"] == 48


def test_rejected_config_carries_the_resolvers_own_message(models):
    result = check_config(sys.executable, dflash_config_file(models, **{"pp-size": 2}), server_args_module=SIM)
    assert result.rejected
    assert result.message == "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1."
    assert result.resolved is None


def test_abbreviated_key_is_rejected_though_argparse_would_accept_it(models):
    path = write_config(models, **{"model-path": models / "target", "speculative-algo": "DFLASH"})
    result = check_config(sys.executable, path, server_args_module=SIM)
    assert result.rejected
    assert result.unknown_keys == ["speculative-algo"]


def test_unknown_flag_is_rejected_with_argparses_message(models):
    path = write_config(models, **{"model-path": models / "target"})
    result = check_config(sys.executable, path, server_args_module=SIM, extra_argv=["--no-such-flag", "1"])
    assert result.rejected
    assert "unrecognized arguments: --no-such-flag" in result.message


def test_secret_fields_never_come_back_in_clear(models):
    path = write_config(models, **{"model-path": models / "target", "api-key": "s3cret"})
    result = check_config(sys.executable, path, server_args_module=SIM)
    assert result.resolved["api_key"] == "********"
    assert "s3cret" not in json.dumps(result.as_dict())


def test_environment_reaches_the_resolver(tmp_path, monkeypatch):
    fake = tmp_path / "fake_server_args.py"
    fake.write_text(textwrap.dedent("""
        import os

        class ServerArgs:
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--config")

            def resolved_dict(self):
                return {"seen": os.environ.get("SGLANG_DDTREE_MAX_TOPK")}

        def prepare_server_args(argv):
            return ServerArgs()
    """))
    (tmp_path / "c.yaml").write_text("{}\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = check_config(sys.executable, str(tmp_path / "c.yaml"), {"SGLANG_DDTREE_MAX_TOPK": 4},
                          server_args_module="fake_server_args")
    assert result.resolved == {"seen": "4"}


def test_unimportable_server_args_module_is_reported_not_taken_for_a_rejection(models):
    with pytest.raises(ResolverUnavailable, match="No module named 'no_such_sglang'"):
        check_config(sys.executable, write_config(models, **{"model-path": "x"}), server_args_module="no_such_sglang")


def test_missing_interpreter_is_named(models):
    with pytest.raises(ResolverUnavailable, match="python: /nonexistent/python is not an executable"):
        check_config("/nonexistent/python", write_config(models, **{"model-path": "x"}))


def test_missing_config_is_named(tmp_path):
    with pytest.raises(ResolverUnavailable, match=r"config: .* does not exist"):
        check_config(sys.executable, str(tmp_path / "absent.yaml"))


def test_a_resolver_that_hangs_is_cut_off(models):
    def hanging(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    with pytest.raises(ResolverUnavailable, match="did not answer within 7 s"):
        check_config(sys.executable, write_config(models, **{"model-path": "x"}), timeout=7, runner=hanging)


def test_environment_is_shown_with_secret_looking_values_masked():
    shown = mask_environment({"HF_TOKEN": "t", "SGLANG_API_KEY": "k", "db_password": "p", "SGLANG_DDTREE_MAX_TOPK": 4})
    assert shown == {"HF_TOKEN": "********", "SGLANG_API_KEY": "********", "db_password": "********",
                     "SGLANG_DDTREE_MAX_TOPK": "4"}


def _fake_sglang(root, check_server_args_body="pass"):
    """A package shaped like SGLang: fakesg.srt.server_args and the modules the launcher's checks come from."""
    files = {
        "fakesg/__init__.py": "",
        "fakesg/srt/__init__.py": "",
        "fakesg/srt/server_args.py": f"""
            class ServerArgs:
                speculative_algorithm = "DFLASH"
                speculative_draft_model_path = "/drafter"
                speculative_draft_model_revision = None
                tool_call_parser = "auto"
                reasoning_parser = None

                @staticmethod
                def add_cli_args(parser):
                    parser.add_argument("--config")

                def resolve_once(self):
                    pass

                def resolved_dict(self):
                    return {{"speculative_algorithm": "DFLASH", "speculative_draft_model_path": "/drafter",
                             "tool_call_parser": "auto"}}

                def check_server_args(self):
                    {check_server_args_body}

            def prepare_server_args(argv):
                return ServerArgs()
        """,
        "fakesg/srt/plugins/__init__.py": """
            def load_plugins():
                pass
        """,
        "fakesg/srt/parser/__init__.py": "",
        "fakesg/srt/parser/template_detection.py": """
            def resolve_auto_parsers(server_args):
                pass
        """,
        "fakesg/srt/configs/__init__.py": "",
        "fakesg/srt/configs/model_config.py": """
            import os
            import types

            class ModelConfig:
                @staticmethod
                def from_server_args(server_args, model_path=None, model_revision=None, is_draft_model=False):
                    layers = 2 if is_draft_model else int(os.environ.get("FAKE_TARGET_LAYERS", "8"))
                    return types.SimpleNamespace(hf_config=types.SimpleNamespace(num_hidden_layers=layers),
                                                 hf_text_config=types.SimpleNamespace(num_hidden_layers=layers))
        """,
        "fakesg/srt/speculative/__init__.py": "",
        "fakesg/srt/speculative/dflash_utils.py": """
            class _Parsed:
                def require_num_layers(self):
                    return 2

                def resolve_target_layer_ids(self, *, target_num_layers, draft_num_layers):
                    if target_num_layers <= 9:
                        raise ValueError("DFLASH target_layer_ids contains an out-of-range layer id.")

            def parse_dflash_draft_config(*, draft_hf_config):
                return _Parsed()
        """,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "c.yaml").write_text("{}\n")
    return str(root / "c.yaml")


def test_launcher_checks_run_in_the_launchers_order_and_name_the_check_that_refused(tmp_path, monkeypatch):
    config = _fake_sglang(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = check_config(sys.executable, config, server_args_module="fakesg.srt.server_args")
    # The fake target has 8 layers: the strict draft parse refuses, after everything before it ran.
    assert result.rejected
    assert result.stage == "launcher:dflash_draft_config"
    assert result.message == "ValueError: DFLASH target_layer_ids contains an out-of-range layer id."
    assert result.launcher_checks == []  # a refusal reports where, not a partial list


def test_an_accepted_config_ran_every_launcher_check_in_order(tmp_path, monkeypatch):
    config = _fake_sglang(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = check_config(sys.executable, config, {"FAKE_TARGET_LAYERS": "16"},
                          server_args_module="fakesg.srt.server_args")
    assert not result.rejected, result.message
    assert result.launcher_checks == ["load_plugins", "check_server_args", "resolve_auto_parsers", "model_config",
                                      "draft_model_config", "dflash_draft_config"]


def test_a_failed_launcher_assert_is_a_rejection_with_its_message(tmp_path, monkeypatch):
    config = _fake_sglang(tmp_path, 'assert ":" not in "a:b", "served_model_name cannot contain a colon"')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = check_config(sys.executable, config, server_args_module="fakesg.srt.server_args")
    assert result.rejected
    assert result.stage == "launcher:check_server_args"
    assert result.message == "AssertionError: served_model_name cannot contain a colon"


def test_a_server_args_module_that_is_not_sglangs_runs_only_its_own_check(models):
    result = check_config(sys.executable, dflash_config_file(models, **{"speculative-dflash-block-size": 8}),
                          server_args_module=SIM)
    assert not result.rejected
    assert result.launcher_checks == []  # the sim defines no check_server_args
