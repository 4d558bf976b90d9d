"""Engine throughput: the same vector run on a Flink session cluster and on the local runner.

Builds (in --work) a clustered store (default 20k chunks x 384 dims, exact search) and a query
file (default 20k vectors), provisions Beam 2.62 with its Flink job server as the engine tests do
(`engines/provision.py`), starts a Flink cluster of 2 task slots and an SDK worker pool,
then runs `rag-evidence run` with the SDK venv's python twice: with no runner (the local
FnApiRunner) and on Flink. Prints seconds, queries/s and the ratio Flink / local, and checks
both outputs hold the same results. Not expected to be faster on 2 cores: the ratio shows
what the engine's start and transport cost, and that nothing grows per element.

    python bench/engine_throughput.py [--queries 20000] [--chunks 20000] [--work /tmp/engine-bench]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bulk_scale import build_store, write_queries

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engines import clusters, provision  # noqa: E402
from engines.wheel import build_wheel  # noqa: E402


def _run(python: Path, env: dict[str, str], work: Path, name: str, config: Path,
         queries: Path, runner: list[str]) -> tuple[float, dict[str, dict]]:
    out = work / f"out-{name}.jsonl"
    started = time.monotonic()
    done = subprocess.run([str(python), "-m", "pipeline.cli", "run", "--config", str(config),
                           "--queries", str(queries), "--out", str(out), *runner],
                          cwd=work, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the {name} run failed ({done.returncode}):\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    with out.open() as lines:
        results = {row["query_id"]: row for row in map(json.loads, lines)}
    return seconds, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--work", default="/tmp/engine-bench")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    store, queries = work / "store", work / f"queries-{args.queries}.jsonl"
    if not store.exists():
        build_store(store, args.chunks, 384, "flat")
    if not queries.exists():
        write_queries(queries, args.queries, 384)
    config = work / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {store}\n    index: flat\n")

    python = provision.sdk_python(build_wheel(work / "wheel"))
    env = clusters.sdk_environment(python, work / "models")
    local_seconds, local = _run(python, env, work, "local", config, queries, [])
    cluster = Path(tempfile.mkdtemp(prefix="cluster-", dir=work))  # a fresh conf and logs
    (cluster / "pool").mkdir()
    with clusters.worker_pool(python, cluster / "pool", env) as pool, \
            clusters.flink_cluster(provision.flink_home(), cluster / "flink") as rest:
        flink_seconds, flink = _run(
            python, env, work, "flink", config, queries,
            clusters.flink_options(rest, pool.address, provision.job_server_jar("flink")))
    n = args.queries
    print(f"local runner   {local_seconds:7.1f} s  {n / local_seconds:7.0f} queries/s")
    print(f"flink 2 slots  {flink_seconds:7.1f} s  {n / flink_seconds:7.0f} queries/s")
    print(f"ratio flink / local: {flink_seconds / local_seconds:.2f} "
          f"(same results: {flink == local}, {len(local)} queries answered)")


if __name__ == "__main__":
    main()
