#!/usr/bin/env python3
"""Keep docs/troubleshooting.md in step with every refusal and failure the toolkit can print.

Messages are read from the code, never typed twice:
  - roles/*/tasks/*.yml and playbooks/**/*.yml: the msg of each ansible.builtin.fail and the fail_msg (or msg)
    of each ansible.builtin.assert (a message that only forwards a refusal computed in Python, such as
    "{{ _x_refusal }}", has no text of its own: the Python side is read instead);
  - library/*.py, module_utils/specgate/**/*.py, filter_plugins/*.py, action_plugins/*.py (parsed with ast):
      * the message of every exception made (`raise SomeError(<message>)`, or one returned to be raised: a call
        of a name ending in Error, Exception, Refusal, Unavailable, Fail or Exit);
      * `module.fail_json(msg=<message>)`, and an action plugin's failed result (`result.update(failed=True,
        msg=<message>)`, `result["msg"] = <message>`);
      * an entry added to a list of problems: `<...>problems/errors/refusals.append(<message>)` (also `extend`,
        `+= [...]`);
      * what a refusal helper returns - a function whose name ends in refusal(s), problems, _error, message,
        _paragraph, _failure or gave_up, or whose result is added to a list of problems (its returned strings
        and the strings of the lists it builds);
      * the message of a refusal record: a class of the same file with `message` and `fix` fields, such as
        preflight's Problem(variable, message, fix);
      * a result's `.reason` set to a string (why a wait gave up).
    A message given as a bare local name is read from that name's assignments in the same function.

Each message becomes a template (every format field or Jinja expression becomes "…") and gets a stable key: its
leading words, up to the first clause end (":", ";" or ".") once four words are in, at most 12 words, less a
trailing field. Messages whose key is the same share one entry. Each entry of the doc carries its key in a
`<!-- key: ... -->` comment; adding a refusal is: run this script, then write the entry's cause and fix.

    scripts/gen_troubleshooting.py           add a skeleton entry for each message without one (under its stage;
                                             hand-written entries are kept), then list what is left to write
    scripts/gen_troubleshooting.py --check   exit 1 naming each message without an entry, each entry whose
                                             message is gone from the code, and each entry still marked TODO (CI)
    scripts/gen_troubleshooting.py --list    print every message found, by stage, with its key and where it is
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = Path("docs") / "troubleshooting.md"
FIELD = "…"  # what a format field or a Jinja expression becomes in a template
TODO = "TODO"
MIN_KEY_WORDS = 4
MAX_KEY_WORDS = 12
KEY_COMMENT = re.compile(r"^<!-- key: (.*) -->$", re.MULTILINE)  # on a line of its own

# The doc's sections, in the data flow's order: (stage, heading).
STAGES = [
    ("preflight", "preflight"),
    ("any_stage", "Any stage"),
    ("cuda_toolkit", "cuda_toolkit"),
    ("sglang_env", "sglang_env"),
    ("model_weights", "model_weights"),
    ("sglang_service", "sglang_service"),
    ("spec_gate", "spec_gate"),
    ("spec_sweep", "spec_sweep"),
    ("sglang_router", "sglang_router (replicas behind the router)"),
    ("fleet_rollout", "fleet_rollout (canary, batches, the fleet report)"),
    ("locks_rollback", "Locks and rollback"),
    ("playbooks", "Demo and controller playbooks"),
]
STAGE_NAMES = [stage for stage, _ in STAGES]
# module_utils/specgate/<package>/ → stage (a library module or plugin takes that of the package it imports most).
PACKAGE_STAGE = {
    "preflight": "preflight",
    "common": "any_stage",
    "cuda": "cuda_toolkit",
    "env": "sglang_env",
    "weights": "model_weights",
    "service": "sglang_service",
    "gate": "spec_gate",
    "sweep": "spec_sweep",
    "fleet": "sglang_router",
}
# Files whose messages belong to another stage than their folder says.
FILE_STAGE = {
    "module_utils/specgate/service/host_lock.py": "locks_rollback",
    "library/specgate_lock.py": "locks_rollback",
    "roles/sglang_service/tasks/lock.yml": "locks_rollback",
    "roles/sglang_service/tasks/unlock.yml": "locks_rollback",
    "roles/sglang_service/tasks/break_lock.yml": "locks_rollback",
    "roles/sglang_service/tasks/rollback.yml": "locks_rollback",
    "roles/sglang_service/tasks/promote.yml": "locks_rollback",
    "playbooks/rollback.yml": "locks_rollback",
    "playbooks/unlock.yml": "locks_rollback",
    "library/specgate_declared_variables.py": "any_stage",
    "action_plugins/specgate_declared_variables.py": "any_stage",
    "filter_plugins/model_weights.py": "model_weights",
    "filter_plugins/sglang_config.py": "sglang_service",
    "filter_plugins/sglang_release.py": "sglang_service",
    "filter_plugins/spec_gate.py": "spec_gate",
    "filter_plugins/spec_sweep.py": "spec_sweep",
    "filter_plugins/fleet_rollout.py": "fleet_rollout",
    "module_utils/specgate/fleet/rollout.py": "fleet_rollout",
    "module_utils/specgate/gate/sglang_crosscheck.py": "spec_gate",
    # The engine-version catalog: its refusals are of the pin the service renders for (sglang_env judges it first).
    "module_utils/specgate/common/engine.py": "sglang_service",
    "library/specgate_follow_job.py": "any_stage",
    "action_plugins/specgate_follow_job.py": "any_stage",
}
FAIL_MODULES = {"ansible.builtin.fail", "ansible.legacy.fail", "fail"}
ASSERT_MODULES = {"ansible.builtin.assert", "ansible.legacy.assert", "assert"}
PROBLEM_LIST = re.compile(r"(problems|errors|refusals)$")
REFUSAL_HELPER = re.compile(r"(refusals?|problems|_error|(^|_)message|_paragraph|_failure|gave_up)$")
EXCEPTION = re.compile(r"(Error|Exception|Refusal|Unavailable|Fail|Exit)$")


@dataclass(frozen=True)
class Message:
    stage: str
    template: str  # the message with each format field / Jinja expression as FIELD, whitespace collapsed
    where: str  # path:line, relative to the root

    @property
    def key(self) -> str:
        return key_of(self.template)


# --- templates and keys ------------------------------------------------------------------------------------------


def _collapse(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(rf"{FIELD}(\s*{FIELD})+", FIELD, text)


def key_of(template: str) -> str:
    """The stable key of a message: its leading words up to the first clause end once MIN_KEY_WORDS words are in."""
    words: list[str] = []
    literal = 0
    for word in _collapse(template).split():
        words.append(word)
        if re.search(r"[A-Za-z0-9]", word.replace(FIELD, "")):
            literal += 1
        if literal >= MIN_KEY_WORDS and word.endswith((":", ";", ".")) and word not in ("e.g.", "i.e.", "etc."):
            break
        if len(words) >= MAX_KEY_WORDS:
            break
    while len(words) > 1 and words[-1].rstrip(":;,.") == FIELD:  # a trailing field says nothing
        words.pop()
    return " ".join(words).rstrip(":;,.").replace("-->", "->")


def _has_text(template: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2}", template.replace(FIELD, " ")))


def jinja_template(text: str) -> str:
    """A task's message with each {{ }}, {% %} and {# #} block as FIELD (quotes inside a block are respected)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        opener = text[i : i + 2]
        if opener in ("{{", "{%", "{#"):
            closer = {"{{": "}}", "{%": "%}", "{#": "#}"}[opener]
            j, quote = i + 2, ""
            while j < len(text):
                ch = text[j]
                if quote:
                    quote = "" if ch == quote else quote
                elif ch in "'\"":
                    quote = ch
                elif text.startswith(closer, j):
                    break
                j += 1
            out.append(FIELD)
            i = j + 2
        else:
            out.append(text[i])
            i += 1
    return _collapse("".join(out))


def _format_template(text: str) -> str:
    """'a {x} b'.format(...) → 'a … b'."""
    return re.sub(r"(?<!\{)\{[^{}]*\}(?!\})", FIELD, text).replace("{{", "{").replace("}}", "}")


class _Scope:
    """Assignments of bare local names in one function, to read a message built from a name."""

    def __init__(self, function: ast.AST | None) -> None:
        self.values: dict[str, list[ast.expr]] = {}
        for node in ast.walk(function) if function is not None else ():
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.values.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.values.setdefault(node.target.id, []).append(node.value)


def templates(node: ast.expr | None, scope: _Scope | None = None, depth: int = 0) -> list[str]:
    """The message templates a string expression can give (an if-expression gives both branches)."""
    if node is None or depth > 4:
        return [FIELD]
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else [FIELD]
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else FIELD for v in node.values]
        return ["".join(str(p) for p in parts)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in templates(node.left, None, depth + 1) for b in templates(node.right, None, depth + 1)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        return [re.sub(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[sdrfgi]", FIELD, str(node.left.value))]
    if isinstance(node, ast.IfExp):
        return templates(node.body, scope, depth + 1) + templates(node.orelse, scope, depth + 1)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
        return [_format_template(node.func.value.value)]
    if isinstance(node, ast.Name) and scope is not None and node.id in scope.values:
        return [t for value in scope.values[node.id] for t in templates(value, None, depth + 1)]
    return [FIELD]


# --- Python ------------------------------------------------------------------------------------------------------


def _terminal_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _record_classes(tree: ast.Module) -> dict[str, int]:
    """Refusal records of this file - classes with a `message` and a `fix` field - → the message's position."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            if "message" in fields and "fix" in fields:
                found[node.name] = fields.index("message")
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.AST]]:
    """(enclosing function or None, node) for every node of the module."""

    def walk(node: ast.AST, function: ast.AST | None) -> Iterator[tuple[ast.AST | None, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            yield inner, child
            yield from walk(child, inner)

    yield from walk(tree, None)


def _elements(value: ast.expr) -> list[ast.expr]:
    return list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value]


def _added_to_problems(node: ast.AST) -> list[ast.expr]:
    """What `problems.append(x)`, `problems.extend([...])` or `problems += [...]` adds to a list of problems."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
            and node.func.attr in ("append", "extend", "insert")
            and PROBLEM_LIST.search(_terminal_name(node.func.value))):
        return [node.args[-1]] if node.func.attr != "extend" else _elements(node.args[-1])
    if isinstance(node, ast.AugAssign) and PROBLEM_LIST.search(_terminal_name(node.target)):
        return _elements(node.value)
    return []


def _helpers(tree: ast.Module) -> set[str]:
    """Refusal helpers of this file: named as one (REFUSAL_HELPER), or whose result is added to a list of problems."""
    named = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = {name for name in named if REFUSAL_HELPER.search(name)}
    for node in ast.walk(tree):
        for value in _added_to_problems(node):
            if isinstance(value, ast.Call) and _terminal_name(value.func) in named:
                found.add(_terminal_name(value.func))
    return found


def _python_sinks(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.expr]]:
    """(enclosing function, message expression) for every place a refusal or failure message is written."""
    records = _record_classes(tree)
    helpers = _helpers(tree)
    for function, node in _functions(tree):
        helper = function is not None and function.name in helpers
        for value in _added_to_problems(node):
            yield function, value
        if isinstance(node, ast.Call):
            name = _terminal_name(node.func)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if EXCEPTION.search(name):  # an exception made (raised, or returned to be raised)
                if node.args:
                    yield function, node.args[0]
                yield from ((function, keywords[k]) for k in ("msg", "message") if k in keywords)
            elif name == "fail_json" and "msg" in keywords:
                yield function, keywords["msg"]
            elif "msg" in keywords and isinstance(keywords.get("failed"), ast.Constant) and keywords["failed"].value:
                yield function, keywords["msg"]  # an action plugin's result.update(failed=True, msg=...)
            elif isinstance(node.func, ast.Name) and name in records:
                if len(node.args) > records[name]:
                    yield function, node.args[records[name]]
                yield from ((function, keywords[k]) for k in ("message",) if k in keywords)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "reason":
                    yield function, node.value  # why a wait gave up
                elif (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                        and target.slice.value == "msg"):
                    yield function, node.value  # an action plugin's result["msg"]
            if helper and isinstance(node.value, ast.List):
                yield from ((function, e) for e in node.value.elts)
        elif helper and isinstance(node, ast.Return) and node.value is not None:
            yield from ((function, e) for e in _elements(node.value))


def _python_stage(relative: str, tree: ast.Module) -> str:
    """The stage a file's messages belong to: FILE_STAGE, else its module_utils package, else (library/, plugins)
    the stage package it imports most (common/ only when it imports no other)."""
    if relative in FILE_STAGE:
        return FILE_STAGE[relative]
    parts = relative.split("/")
    if parts[0] == "module_utils" and len(parts) > 3:
        return PACKAGE_STAGE.get(parts[2], "sglang_service")
    imported = [node.module.split(".")[3] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("ansible.module_utils.specgate.") and node.module.count(".") >= 3]
    packages = [p for p in imported if p != "common"] or imported
    if packages:
        return PACKAGE_STAGE.get(max(packages, key=packages.count), "sglang_service")
    return "sglang_service"


def python_messages(path: Path, root: Path) -> list[Message]:
    relative = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    stage = _python_stage(relative, tree)
    found = []
    for function, expression in _python_sinks(tree):
        for raw in templates(expression, _Scope(function)):
            template = _collapse(raw)
            if _has_text(template):
                found.append(Message(stage, template, f"{relative}:{expression.lineno}"))
    return found


# --- tasks -------------------------------------------------------------------------------------------------------


def _task_messages(node: yaml.Node) -> Iterator[tuple[str, int]]:
    """(message, line) of each fail/assert task anywhere in a tasks file or playbook."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _task_messages(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else ""
            wanted = ("msg",) if name in FAIL_MODULES else ("fail_msg", "msg") if name in ASSERT_MODULES else ()
            if wanted and isinstance(value, yaml.MappingNode):
                args = {k.value: v for k, v in value.value if isinstance(k, yaml.ScalarNode)}
                message = next((args[w] for w in wanted if w in args), None)
                if isinstance(message, yaml.ScalarNode):
                    yield message.value, message.start_mark.line + 1
                elif isinstance(message, yaml.SequenceNode):
                    text = " ".join(item.value for item in message.value if isinstance(item, yaml.ScalarNode))
                    yield text, message.start_mark.line + 1
            else:
                yield from _task_messages(value)


def _task_stage(relative: str) -> str:
    if relative in FILE_STAGE:
        return FILE_STAGE[relative]
    parts = relative.split("/")
    if parts[0] == "roles" and parts[1] in STAGE_NAMES:
        return parts[1]
    return "playbooks"


def task_messages(path: Path, root: Path) -> list[Message]:
    relative = path.relative_to(root).as_posix()
    found = []
    for document in yaml.compose_all(path.read_text(encoding="utf-8")):
        for text, line in _task_messages(document):
            template = jinja_template(text)
            if _has_text(template):
                found.append(Message(_task_stage(relative), template, f"{relative}:{line}"))
    return found


# --- the code, the doc and the check -----------------------------------------------------------------------------


def python_files(root: Path) -> list[Path]:
    files = [*(root / "library").glob("*.py"), *(root / "module_utils" / "specgate").rglob("*.py"),
             *(root / "filter_plugins").glob("*.py"), *(root / "action_plugins").glob("*.py")]
    return sorted(p for p in files if p.is_file())


def task_files(root: Path) -> list[Path]:
    files = [*(root / "roles").glob("*/tasks/*.yml"), *(root / "playbooks").rglob("*.yml")]
    return sorted(p for p in files if p.is_file())


def extract(root: Path = ROOT) -> list[Message]:
    """Every user-facing refusal and failure message in the code under `root`."""
    found = [m for path in python_files(root) for m in python_messages(path, root)]
    found += [m for path in task_files(root) for m in task_messages(path, root)]
    return sorted(found, key=lambda m: (STAGE_NAMES.index(m.stage), m.where))


def by_key(messages: list[Message]) -> dict[str, list[Message]]:
    """Messages grouped by key, in the order found (a key's stage is that of its first message)."""
    grouped: dict[str, list[Message]] = {}
    for message in messages:
        grouped.setdefault(message.key, []).append(message)
    return grouped


def doc_entries(text: str) -> dict[str, str]:
    """The doc's entries: key → the entry's text (up to the next key or section heading)."""
    entries = {}
    matches = list(KEY_COMMENT.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        section = re.search(r"^#{1,3} ", body, flags=re.MULTILINE)
        entries[match.group(1).strip()] = body[: section.start()] if section else body
    return entries


@dataclass
class Report:
    missing: dict[str, list[Message]]  # key → its messages: in the code, no entry in the doc
    stale: list[str]  # entries whose key no message in the code has any more
    unwritten: list[str]  # entries whose cause or fix is still TODO

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.unwritten)

    def lines(self, doc: str = str(DOC)) -> list[str]:
        out = []
        for key, messages in self.missing.items():
            out.append(f"{doc}: no entry for the message {key!r} ({', '.join(m.where for m in messages)})")
        out += [f"{doc}: the entry {key!r} matches no message in the code any more (remove it or fix its key)"
                for key in self.stale]
        out += [f"{doc}: the entry {key!r} still has {TODO} for its cause or fix" for key in self.unwritten]
        return out


def check(root: Path = ROOT, doc: Path | None = None) -> Report:
    grouped = by_key(extract(root))
    doc_path = doc if doc is not None else root / DOC
    entries = doc_entries(doc_path.read_text(encoding="utf-8")) if doc_path.is_file() else {}
    return Report(
        missing={key: messages for key, messages in grouped.items() if key not in entries},
        stale=[key for key in entries if key not in grouped],
        unwritten=[key for key, body in entries.items() if key in grouped and TODO in body],
    )


def _code_span(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def skeleton(key: str, messages: list[Message]) -> str:
    return (f"### {_code_span(key)}\n<!-- key: {key} -->\n\n"
            f"- **Cause:** {TODO} ({', '.join(m.where.split(':')[0] for m in messages[:3])})\n"
            f"- **Fix:** {TODO}\n")


def _stage_heading(stage: str) -> str:
    return f"## {dict(STAGES)[stage]}"


def with_skeletons(text: str, missing: dict[str, list[Message]]) -> str:
    """The doc with a skeleton entry appended to its stage's section for each missing key."""
    for stage in STAGE_NAMES:
        new = [skeleton(key, messages) for key, messages in missing.items() if messages[0].stage == stage]
        if not new:
            continue
        heading = _stage_heading(stage)
        block = "\n".join(new)
        lines = text.split("\n")
        if heading in lines:
            start = lines.index(heading)
            end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1
            lines[end:end] = ["", block.rstrip("\n")]
            text = "\n".join(lines)
        else:
            later = [_stage_heading(s) for s in STAGE_NAMES[STAGE_NAMES.index(stage) + 1 :]]
            at = min((text.index(f"\n{h}\n") + 1 for h in later if f"\n{h}\n" in text), default=None)
            section = f"{heading}\n\n{block.rstrip()}\n\n"
            text = (text.rstrip("\n") + "\n\n" + section) if at is None else text[:at] + section + text[at:]
    return text.rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when the doc and the code disagree (CI)")
    mode.add_argument("--list", action="store_true", help="print every message found, by stage")
    args = parser.parse_args()
    if args.list:
        for key, messages in by_key(extract()).items():
            print(f"{messages[0].stage}\t{key}\t{' '.join(m.where for m in messages)}")
        return 0
    report = check()
    if args.check:
        for line in report.lines():
            print(line, file=sys.stderr)
        if not report.ok:
            print("Run scripts/gen_troubleshooting.py, then write each entry's cause and fix.", file=sys.stderr)
        return 0 if report.ok else 1
    if report.missing:
        path = ROOT / DOC
        path.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8") if path.is_file() else "# Troubleshooting\n"
        path.write_text(with_skeletons(text, report.missing), encoding="utf-8")
        print(f"{DOC}: added {len(report.missing)} skeleton entr{'y' if len(report.missing) == 1 else 'ies'}")
    for line in check().lines():
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
