"""A ratchet: a stage option is declared once, in its options dataclass (`*Options` outside corpusprep/cli/):
the field (`corpusprep.flags.flag`) holds its default, help and range, and the command takes the typer option
from it (`cli/options.py: with_options`). So no command declares a parameter named like a declared flag (a
second declaration), and a command-line option whose name is another options field takes its default from
that field (`= PairOptions.seed`), never a second copy of the value (`= 12345`). ALLOWED lists what is left,
per file; lower a number when you move a default, never raise one."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED: dict[str, int] = {}  # none left
DECLARATIONS = ("flag", "setting")  # corpusprep.flags: the default is the first argument


def options_classes() -> list[ast.ClassDef]:
    """Every options dataclass outside corpusprep/cli/."""
    found = []
    for path in [*(ROOT / "corpusprep").rglob("*.py"), *(ROOT / "trainer").rglob("*.py")]:
        if "cli" in path.relative_to(ROOT).parts:
            continue
        found += [node for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.ClassDef) and node.name.endswith("Options")]
    return found


def declared_default(value: ast.expr) -> ast.expr:
    """A field's default: the value, or the first argument of its declaration (`flag(128, "help")`)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in DECLARATIONS:
        return value.args[0]
    return value


def option_fields() -> dict[str, set[str]]:
    """Field name -> the source text of its defaults in every options dataclass outside corpusprep/cli/."""
    fields: dict[str, set[str]] = {}
    for node in options_classes():
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value:
                fields.setdefault(st.target.id, set()).add(ast.unparse(declared_default(st.value)))
    return fields


def declared_flags() -> set[str]:
    """The fields declared as flags (`flag(...)`, or another dataclass's `like(...)`)."""
    return {st.target.id for node in options_classes() for st in node.body
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
            and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name)
            and st.value.func.id in ("flag", "like")}


def redeclared(source: str, flags: set[str]) -> list[str]:
    """The parameters of the functions in `source` named like a declared flag: a second declaration."""
    return [f"{node.name}({arg.arg})" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for arg in (*node.args.args, *node.args.kwonlyargs) if arg.arg in flags]


def repeated_defaults(source: str, fields: dict[str, set[str]]) -> list[str]:
    """The parameters of the functions in `source` whose default repeats an options field's default."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args[len(node.args.args) - len(node.args.defaults):]
            pairs = [*zip(args, node.args.defaults, strict=True),
                     *zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
            for arg, default in pairs:
                if default is None or arg.arg not in fields:
                    continue
                taken = (isinstance(default, ast.Attribute) and isinstance(default.value, ast.Name)
                         and default.value.id.endswith("Options"))
                if not taken and ast.unparse(default) in fields[arg.arg]:
                    found.append(f"{node.name}({arg.arg}={ast.unparse(default)})")
    return found


def test_cli_defaults_come_from_the_options_dataclasses():
    fields = option_fields()
    counts = Counter()
    details = {}
    for path in sorted((ROOT / "corpusprep" / "cli").glob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        found = repeated_defaults(path.read_text(), fields)
        counts[name], details[name] = len(found), found
    over = {f: details[f] for f, n in counts.items() if n > ALLOWED.get(f, 0)}
    assert not over, f"a CLI default repeats an options dataclass's (take it from the field): {over}"
    stale = {f: counts[f] for f, n in ALLOWED.items() if counts[f] < n}
    assert not stale, f"fewer now: lower ALLOWED's rows: {stale}"


def test_the_scan_sees_a_copy_and_accepts_the_field():
    fields = {"seed": {"12345"}, "compression": {"'lz4'"}}
    source = "def f(seed=12345, compression=ShardOptions.compression, other=1): pass\n"
    assert repeated_defaults(source, fields) == ["f(seed=12345)"]


def test_no_command_declares_an_option_its_options_dataclass_declares():
    flags = declared_flags()
    assert {"max_seq_length", "masked_lm_prob", "vocab_size", "splitter", "threshold"} <= flags
    found = {path.name: redeclared(path.read_text(), flags)
             for path in sorted((ROOT / "corpusprep" / "cli").glob("*.py"))}
    assert not any(found.values()), f"declared in its options dataclass already (corpusprep.flags): {found}"


def test_the_scans_see_a_declaration_and_a_second_one():
    tree = ast.parse("class XOptions:\n    seed: int = flag(12345, 'help')\n    other: int = 3\n")
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [ast.unparse(declared_default(st.value)) for st in node.body] == ["12345", "3"]
    assert redeclared("def shard(pairs_dir, *, seed: int = 1): pass\n", {"seed"}) == ["shard(seed)"]
