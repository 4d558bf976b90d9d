"""examples/nightly.sh treats its arguments as data: a RUN_ID that is not a folder's name in
RUNS_DIR is refused in one line, exit 2, before anything is made or run; and the shell
scripts are shellcheck clean."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "nightly.sh"


@pytest.mark.parametrize("run_id", ["../escaped", "a/b", "/abs", ".hidden", "..", "-rf",
                                    "a..b", "tab\there", "new\nline", "bell\a"])
def test_a_run_id_that_is_no_folder_name_is_refused_before_anything_is_made(
        tmp_path: Path, run_id: str) -> None:
    runs = tmp_path / "deep" / "runs"
    runs.mkdir(parents=True)
    called = tmp_path / "called"
    done = subprocess.run(
        ["bash", str(SCRIPT), "c.yaml", "docs", "q.jsonl", str(runs), run_id],
        env={**os.environ, "RAG_EVIDENCE": f"touch {called}"},
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "RUN_ID" in done.stderr and done.stderr.count("\n") == 1
    assert list(runs.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["deep"]
    assert not called.exists()


def test_the_shell_scripts_are_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs shellcheck (Debian's package): .ci/run lost that step")
        pytest.skip("shellcheck is not installed here (apt-get install shellcheck)")
    scripts = [SCRIPT, ROOT / ".ci" / "run", *(ROOT / "bench").glob("*.sh")]
    done = subprocess.run([shellcheck, "-S", "warning", *map(str, scripts)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout
