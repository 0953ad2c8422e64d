"""sglang_config_check's logic: run the resolver driver under another interpreter and read its answer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from ansible.module_utils.specgate.sglang_resolve import (
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
