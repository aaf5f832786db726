"""The layers of ``core`` as docs/ARCHITECTURE.md draws them: a module imports only from its
own layer and the ones below (function-level imports included), and ``core`` never imports
the shell. The layer table is read from ARCHITECTURE.md, so the document and the code
cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layer_table() -> dict[str, int]:
    """``core/<folder>`` (or ``core/errors.py``) -> layer number, from ARCHITECTURE.md."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `(core/[a-z_]+(?:\.py|/))` \|", text, re.MULTILINE)
    return {path.rstrip("/").removesuffix(".py"): int(n) for n, path in rows}


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    parts = module.split(".")
    if parts[0] != "core" or len(parts) < 2:
        return None
    return layers.get(f"core/{parts[1]}")


def test_the_table_names_every_folder_of_core() -> None:
    layers = layer_table()
    folders = {
        f"core/{p.name}"
        for p in (ROOT / "core").iterdir()
        if p.is_dir() and p.name != "__pycache__"
    }
    assert folders | {"core/errors"} == set(layers)


def test_no_module_imports_a_layer_above_its_own() -> None:
    layers = layer_table()
    upward = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        own = layer_of(module, layers)
        assert own is not None or module in ("core.__init__", "core.errors"), module
        own = own if own is not None else 1
        for imported in imported_modules(path):
            if imported.split(".")[0] in ("paimon_cli", "typer", "rich"):
                upward.append(f"{module} imports {imported} (the shell)")
            target = layer_of(imported, layers)
            if target is not None and target > own:
                upward.append(f"{module} (layer {own}) imports {imported} (layer {target})")
    assert upward == []
