"""A Flink session cluster, a Spark standalone cluster and Beam's SDK worker pool, each started
on loopback ports of its own and stopped by its processes' ids."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from connectors.embedders.model_location import CACHE_ENV
from engines.processes import free_port, stop_process_group

START_SECONDS = 120


@contextlib.contextmanager
def flink_cluster(home: Path, work: Path, slots: int = 2) -> Iterator[str]:
    """A job manager and a task manager of `slots` slots; yields the REST address
    (`--flink_master`)."""
    conf = work / "conf"
    for folder in (conf, work / "log", work / "tmp"):
        folder.mkdir(parents=True)
    for name in os.listdir(home / "conf"):
        (conf / name).write_bytes((home / "conf" / name).read_bytes())
    rest = free_port()
    settings = yaml.safe_load((conf / "config.yaml").read_text())
    settings["jobmanager"]["rpc"]["port"] = free_port()
    settings["rest"] = {"port": rest, "address": "localhost", "bind-address": "localhost"}
    settings["taskmanager"]["numberOfTaskSlots"] = slots
    # every blocking result partition of a batch job takes at least
    # `taskmanager.network.sort-shuffle.min-buffers` (512 by default) of the network buffers
    # while its producer runs, and the run's graph holds more shuffles than the default network
    # memory has buffers for at parallelism 2 ("Insufficient number of network buffers:
    # required 512, but only 485"; with 256mb, a continued night: "required 512, but only 507")
    settings["taskmanager"]["memory"]["network"] = {"min": "256mb", "max": "256mb"}
    settings["taskmanager"].setdefault("network", {})["sort-shuffle"] = {"min-buffers": 128}
    # Beam's data channel to the SDK workers (gRPC on Netty) takes direct memory outside
    # Flink's network buffers: at the default 0 task off-heap a 10k-query run failed with
    # "OutOfMemoryError: Direct buffer memory"
    settings["taskmanager"]["memory"]["process"]["size"] = "4g"
    settings["taskmanager"]["memory"]["task"] = {"off-heap": {"size": "768m"}}
    settings["taskmanager"]["memory"]["framework"] = {"off-heap": {"size": "256m"}}
    # a failed task (a killed SDK worker) restarts its region instead of failing the job
    settings["restart-strategy"] = {"type": "fixed-delay",
                                    "fixed-delay": {"attempts": 3, "delay": "2 s"}}
    settings["parallelism"] = {"default": slots}
    settings["env"] = {**settings.get("env", {}), "pid": {"dir": str(work)},
                       "log": {"dir": str(work / "log")}}
    settings["io"] = {"tmp": {"dirs": str(work / "tmp")}}
    (conf / "config.yaml").write_text(yaml.safe_dump(settings))
    env = {**os.environ, "FLINK_HOME": str(home), "FLINK_CONF_DIR": str(conf),
           "FLINK_LOG_DIR": str(work / "log"), "FLINK_PID_DIR": str(work)}
    address = f"localhost:{rest}"
    try:
        for daemon in ("jobmanager", "taskmanager"):
            subprocess.run(["bash", str(home / "bin" / f"{daemon}.sh"), "start"], env=env,
                           check=True, capture_output=True)
        _wait_for(lambda: _json(f"http://{address}/overview")["slots-available"] >= slots,
                  f"Flink at {address}", work / "log")
        yield address
    finally:
        for pid_file in work.glob("*.pid"):
            for pid in pid_file.read_text().split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)


@contextlib.contextmanager
def spark_cluster(home: Path, work: Path, cores: int = 2) -> Iterator[str]:
    """A master and a worker of `cores` cores; yields the master URL (`--spark_master_url`)."""
    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(work), "SPARK_NO_DAEMONIZE": "1"}
    master = f"spark://127.0.0.1:{port}"
    processes = []
    try:
        for name, args in (
                ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", str(port), "--webui-port", "0"]),
                ("worker", ["org.apache.spark.deploy.worker.Worker", master, "--host",
                            "127.0.0.1", "--cores", str(cores), "--memory", "3g",
                            "--webui-port", "0", "--work-dir",
                            str(work / "work")])):
            with open(work / f"{name}.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [str(home / "bin" / "spark-class"), *args], env=env, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True))
        _wait_for(lambda: "Registering worker" in (work / "master.log").read_text(),
                  f"Spark at {master}", work)
        yield master
    finally:
        for process in reversed(processes):
            stop_process_group(process)


def sdk_environment(python: Path, model_cache: Path) -> dict[str, str]:
    """The environment of a job's launcher and of its workers: `python`'s venv first on PATH
    (the worker pool starts `python` from PATH), the model cached in `model_cache`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "VIRTUAL_ENV": str(python.parents[1]),
            "PATH": f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
            CACHE_ENV: str(model_cache)}


def flink_options(rest: str, pool: str, jar: Path, parallelism: int = 2) -> list[str]:
    """Beam options that run a job on the Flink session cluster at `rest`, its SDK workers
    from the worker pool at `pool`."""
    return ["--runner", "FlinkRunner", "--flink_master", rest, "--flink_job_server_jar",
            str(jar), "--environment_type", "EXTERNAL", "--environment_config", pool,
            "--parallelism", str(parallelism)]


def spark_options(master: str, pool: str, jar: Path) -> list[str]:
    """Beam options that run a job on the Spark standalone cluster at `master`, its SDK
    workers from the worker pool at `pool`."""
    return ["--runner", "SparkRunner", "--spark_master_url", master, "--spark_job_server_jar",
            str(jar), "--environment_type", "EXTERNAL", "--environment_config", pool]


@dataclass(frozen=True)
class WorkerPool:
    """A running SDK worker pool: its address (`--environment_config`) and its process id,
    the parent of every SDK worker it starts."""

    address: str
    pid: int

    def workers(self) -> list[int]:
        """The ids of the SDK workers running now (Beam starts each as `python -c` running
        an `SdkHarness`)."""
        found = subprocess.run(["pgrep", "-P", str(self.pid), "-f", "SdkHarness"],
                               capture_output=True, text=True, check=False)
        return [int(pid) for pid in found.stdout.split()]


@contextlib.contextmanager
def worker_pool(python: Path, work: Path, env: dict[str, str]) -> Iterator[WorkerPool]:
    """Beam's SDK worker pool, run by `python`'s venv from `work`. The pool starts each
    worker as `python` from PATH, so the venv is put first on it; `env` is the workers'
    environment."""
    port = free_port()
    with open(work / "pool.log", "wb") as log:
        pool = subprocess.Popen(
            [str(python), "-m", "apache_beam.runners.worker.worker_pool_main",
             f"--service_port={port}"], cwd=work, env=env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: _listening(port), "the SDK worker pool", work)
        yield WorkerPool(f"localhost:{port}", pool.pid)
    finally:
        stop_process_group(pool)


def _json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return dict(json.load(response))


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("localhost", port)) == 0


def _wait_for(ready: Callable[[], bool], what: str, logs: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, KeyError, ValueError):
            if ready():
                return
        time.sleep(0.5)
    tails = "\n".join(f"{log}:\n{log.read_text(errors='replace')[-2000:]}"
                      for log in sorted(logs.rglob("*.log")))
    raise RuntimeError(f"{what} did not come up within {START_SECONDS} s\n{tails}")
