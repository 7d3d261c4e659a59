"""A ratchet: a command-line option whose name is a field of an options dataclass (`*Options` outside
corpusprep/cli/) takes its default from that field (`= PairOptions.seed`), never a second copy of the value
(`= 12345`), so a default is changed in one place. ALLOWED lists what is left, per file; lower a number when
you move a default, never raise one."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED: dict[str, int] = {}  # none left


def option_fields() -> dict[str, set[str]]:
    """Field name -> the source text of its defaults in every options dataclass outside corpusprep/cli/."""
    fields: dict[str, set[str]] = {}
    for path in [*(ROOT / "corpusprep").rglob("*.py"), *(ROOT / "trainer").rglob("*.py")]:
        if "cli" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Options"):
                for st in node.body:
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value:
                        fields.setdefault(st.target.id, set()).add(ast.unparse(st.value))
    return fields


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
                         and default.value.id.endswith("Options"))  # fmt: skip
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
