"""Which secrets were given on the command line: `-e model_weights_hf_token=hf_...` puts the token in the process
list (visible to every user of the controller) and in the shell's history, where vault or an `-e @file` does not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Shorter values are not secrets worth a warning and would match unrelated arguments.
MIN_SECRET_LENGTH = 8


def secrets_on_command_line(argv: Sequence[str], secrets: Mapping[str, object]) -> list[str]:
    """Names of the secrets whose value appears in an argument of `argv` (sorted)."""
    found = []
    for name, value in secrets.items():
        if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
            continue
        if any(value in arg for arg in argv):
            found.append(name)
    return sorted(found)


def exposure_warning(names: Sequence[str]) -> str:
    return (
        f"{', '.join(names)} came on the command line (-e): the value is in the controller's process list for every "
        "user to read, and in your shell history. Put it in vault instead (ansible-vault encrypt_string, as "
        "vault_hf_token / vault_sglang_api_key in group_vars; see the README's Real hosts), or pass -e @file."
    )
