"""The import contracts of pyproject.toml cover the tree as it is: every step module is one
that `stages/support/` may not import, and `core/` imports nothing of ours."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _contract(name_start: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["name"].startswith(name_start)]
    return contract


def test_support_may_import_no_step_module() -> None:
    steps = {f"stages.{p.stem}" for p in (ROOT / "stages").glob("*.py")
             if p.stem not in ("__init__", "models")}
    assert set(_contract("stages/support/")["forbidden_modules"]) == steps  # type: ignore[arg-type]


def test_core_is_the_bottom_layer() -> None:
    layers = _contract("Layers:")["layers"]
    assert layers == ["pipeline", "stages", "connectors", "core"]
    for path in (ROOT / "core").glob("*.py"):
        for line in path.read_text().splitlines():
            assert not line.startswith(("from pipeline", "from stages", "from connectors")), (
                f"{path.name}: {line}")
