"""`python -m engines provision | flink | spark`, from the checkout: fetch what the clusters
run on, or start a local Flink session cluster or Spark standalone cluster with Beam's SDK
worker pool, print the options that submit `rag-evidence` jobs to it, and stop it all on
Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from engines import clusters, provision
from engines.wheel import build_wheel


def _sdk_python() -> Path:
    with tempfile.TemporaryDirectory() as built:
        return provision.sdk_python(build_wheel(Path(built)))


@contextlib.contextmanager
def _engine(name: str, work: Path, python: Path) -> Iterator[list[str]]:
    """The Beam options of a job on a local cluster of engine `name` whose workers run from
    `python`'s venv, running until the end of the block."""
    env = clusters.sdk_environment(python, work / "models")
    (work / "pool").mkdir(parents=True)
    with clusters.worker_pool(python, work / "pool", env) as pool:
        (work / name).mkdir()
        jar = provision.job_server_jar(name)
        if name == "flink":
            with clusters.flink_cluster(provision.flink_home(), work / name) as rest:
                yield clusters.flink_options(rest, pool.address, jar)
        else:
            with clusters.spark_cluster(provision.spark_home(), work / name) as master:
                yield clusters.spark_options(master, pool.address, jar)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engines", description=__doc__)
    parser.add_argument("what", choices=("provision", "flink", "spark"),
                        help="provision: fetch everything now; flink, spark: start a cluster")
    parser.add_argument("--work", type=Path,
                        help="the cluster's folder: logs, configuration (default: a temp dir)")
    args = parser.parse_args(argv)
    lacking = provision.missing_tools()
    if lacking:
        print(f"python -m engines: needs {lacking}", file=sys.stderr)
        return 2
    if args.what == "provision":
        for engine in provision.RUNNERS:
            print(provision.job_server_jar(engine))
        print(provision.flink_home(), provision.spark_home(), _sdk_python(), sep="\n")
        return 0
    with contextlib.ExitStack() as stack:
        work = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        python = _sdk_python()
        options = stack.enter_context(_engine(args.what, work, python))
        launcher = python.parent / "rag-evidence"
        print(f"{args.what} is up; submit jobs with Beam {provision.BEAM}'s launcher:\n\n"
              f"  {launcher} run --config C --queries Q --out OUT \\\n"
              f"      {shlex.join(options)}\n\n"
              "Paths must be readable by the workers (here: this machine). Ctrl-C stops "
              "the cluster.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
