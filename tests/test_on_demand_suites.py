"""The torch and engines suites run when asked for, and say so when they are not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pytest in subprocesses

ROOT = Path(__file__).resolve().parents[1]
ONE_TORCH_TEST = "tests/connectors/embedders/test_onnx_backend.py"


def _pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
                           "--collect-only", "-q", *args], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=300)


def test_a_suite_left_out_is_counted_with_how_to_run_it() -> None:
    done = _pytest(ONE_TORCH_TEST)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("left out: 1 torch tests (pip install -e '.[test,quality]' && pytest -m torch)"
            in done.stdout)
    assert "test_onnx_vectors_agree_with_torchs" not in done.stdout


def test_a_suite_named_by_m_is_collected() -> None:
    done = _pytest("-m", "not torch or torch", ONE_TORCH_TEST)
    if done.returncode == 4:  # usage error: this venv has no torch extra
        assert "-m torch needs the quality extra: pip install -e '.[test,quality]'" in done.stderr
    else:
        assert "test_onnx_vectors_agree_with_torchs" in done.stdout
        assert "left out" not in done.stdout


def test_engines_without_java_or_maven_is_one_line_naming_them() -> None:
    path = str(Path(sys.executable).parent)  # the venv alone: no java, no mvn
    done = _pytest("-m", "engines", "tests/engines", env={**os.environ, "PATH": path})
    assert done.returncode == 4
    assert done.stderr.strip().splitlines()[-1] == (
        "ERROR: -m engines needs java and mvn on PATH: Java 17 and Maven (Debian: apt-get "
        "install openjdk-17-jre-headless maven)")
