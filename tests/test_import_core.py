"""`core` is a generic name: make sure it is ours and not a stray package (STYLE 1)."""

from pathlib import Path

import core


def test_core_is_ours() -> None:
    assert Path(core.__file__).resolve().parent == Path(__file__).resolve().parents[1] / "core"
    assert hasattr(core, "__version__")
