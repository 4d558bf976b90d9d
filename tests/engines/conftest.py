"""Session fixtures of the engine tests: the SDK's venv, a Flink and a Spark cluster, started
once (each only when a test asks for it), and the SDK worker pool their tasks call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engines import clusters, provision
from engines.wheel import build_wheel
from tests.engines.jobs import cli


@pytest.fixture(scope="session")
def sdk_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv that launches the jobs and runs the workers (Beam `provision.BEAM`)."""
    return provision.sdk_python(build_wheel(tmp_path_factory.mktemp("wheel")))


@pytest.fixture(scope="session")
def sdk_env(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path) -> dict[str, str]:
    """The environment of the launcher and of the workers: the SDK's venv first on PATH, a
    model cache of this session."""
    return clusters.sdk_environment(sdk_python, tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path,
           sdk_env: dict[str, str]) -> Path:
    """The standard library's docs as a folder of Markdown files."""
    root = tmp_path_factory.mktemp("corpus")
    cli(sdk_python, sdk_env, root, "corpus", str(root / "docs"))
    return root / "docs"


@pytest.fixture(scope="session")
def worker_pool(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path,
                sdk_env: dict[str, str]) -> Iterator[clusters.WorkerPool]:
    with clusters.worker_pool(sdk_python, tmp_path_factory.mktemp("pool"), sdk_env) as pool:
        yield pool


@pytest.fixture(scope="session")
def flink(tmp_path_factory: pytest.TempPathFactory,
          worker_pool: clusters.WorkerPool) -> Iterator[list[str]]:
    """Beam options that run a job on a Flink session cluster of 2 slots."""
    jar = provision.job_server_jar("flink")
    with clusters.flink_cluster(provision.flink_home(), tmp_path_factory.mktemp("flink")) as rest:
        yield clusters.flink_options(rest, worker_pool.address, jar)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory,
          worker_pool: clusters.WorkerPool) -> Iterator[list[str]]:
    """Beam options that run a job on a Spark standalone cluster of 2 cores."""
    jar = provision.job_server_jar("spark")
    with clusters.spark_cluster(provision.spark_home(),
                                tmp_path_factory.mktemp("spark")) as master:
        yield clusters.spark_options(master, worker_pool.address, jar)


@pytest.fixture(params=["flink", "spark"])
def engine(request: pytest.FixtureRequest) -> list[str]:
    """Each engine in turn, as the Beam options of a job run on it."""
    options: list[str] = request.getfixturevalue(request.param)
    return options
