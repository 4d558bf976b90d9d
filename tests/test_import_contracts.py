"""The import contracts of pyproject.toml cover the tree as it is: every step module is one
that `stages/support/` may not import, every stage module but the continuation imports no
Beam, and `core/` imports nothing of ours."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _contract(name_start: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["name"].startswith(name_start)]
    return contract


def _stage_modules(*but: str) -> set[str]:
    """The modules of `stages/`, and `stages.steps` (the package of the candidate steps,
    which each contract names whole, so that a step added there needs no edit of it)."""
    return {f"stages.{p.stem}" for p in (ROOT / "stages").glob("*.py")
            if p.stem not in ("__init__", *but)} | {"stages.steps"}


def test_support_may_import_no_step_module() -> None:
    # what a step is (its record, its view, the ranking rule), not any step
    steps = _stage_modules("models", "candidate_step", "step_views", "ranking") | {
        "stages.transforms"}
    assert set(_contract("stages/support/")["forbidden_modules"]) == steps  # type: ignore[arg-type]


def test_every_stage_module_but_the_continuation_is_held_to_import_no_beam() -> None:
    """The continuation is a Beam step of its own; every other module of `stages/` holds
    functions and records, which `explain` runs without Beam."""
    held = _contract("The stages' functions import no Beam")["source_modules"]
    assert set(held) == _stage_modules("continuation")  # type: ignore[arg-type]


def test_core_is_the_bottom_layer() -> None:
    layers = _contract("Layers:")["layers"]
    assert layers == ["pipeline", "stages", "connectors", "core"]
    for path in (ROOT / "core").glob("*.py"):
        for line in path.read_text().splitlines():
            assert not line.startswith(("from pipeline", "from stages", "from connectors")), (
                f"{path.name}: {line}")
