"""This checkout's wheel, built from a copy of what it packages (so that no build folder or
egg-info lands in the checkout)."""

from __future__ import annotations

import importlib.util
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
                               *_isolation(), "-q", "-w", str(into), str(source)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = into.glob("rag_evidence-*.whl")
    return wheel


def _isolation() -> list[str]:
    """Builds with this venv's setuptools where it makes wheels itself (70.1 and later, or with
    the wheel package); else in pip's isolated build environment (a venv's own setuptools
    65 says `invalid command 'bdist_wheel'`)."""
    try:
        own = importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
    except ImportError:
        own = False
    return ["--no-build-isolation"] if own or importlib.util.find_spec("wheel") else []
