"""This checkout's wheel, built from a copy of what it packages (so that no build folder or
egg-info lands in the checkout)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = tuple(name.rstrip("*") for name in tomllib.loads(
    (ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"])
PACKAGED = ("pyproject.toml", "README.md", *PACKAGES)


def build_wheel(into: Path) -> Path:
    """The wheel of this checkout, written into `into`."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source"
        source.mkdir()
        for name in PACKAGED:
            copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
            copy(ROOT / name, source / name)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                               "--no-build-isolation", "-q", "-w", str(into), str(source)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = into.glob("rag_evidence-*.whl")
    return wheel
