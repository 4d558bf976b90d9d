"""What the local Flink and Spark clusters and the engine tests run on, fetched once into a
cache (`RAG_EVIDENCE_ENGINES_HOME`, by default `~/.cache/rag-evidence/engines`): Beam's Flink
and Spark job servers, assembled from
Maven Central; a Flink and a Spark distribution, from PyPI; and a Python environment holding
the Beam SDK that the job servers match, with this project's wheel.

The job server and the SDK must be one Beam version. Maven Central serves the job servers'
shaded jars of no recent Beam here, but it serves every dependency of the Flink and Spark
runners of Beam 2.62.0, so the job server is that runner's jar with its dependencies on a
classpath (a jar whose manifest names them, as Beam's own `make_classpath_jar` does).

    python -m engines provision     # fetch everything now (CI does, before the tests)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

BEAM = "2.62.0"
"""The newest Beam whose Flink and Spark runners resolve from Maven Central here."""
FLINK = "1.19.3"
FLINK_RUNNER = "1.19"
SPARK = "3.5.6"
"""Beam's Spark 3 runner is built against Spark 3.5 (Scala 2.12), as PyPI's pyspark is."""

HOME = Path(os.environ.get("RAG_EVIDENCE_ENGINES_HOME",
                           Path.home() / ".cache" / "rag-evidence" / "engines"))
ROOT = Path(__file__).resolve().parents[1]

RUNNERS = {
    "flink": (f"beam-runners-flink-{FLINK_RUNNER}",
              "org.apache.beam.runners.flink.FlinkJobServerDriver"),
    "spark": ("beam-runners-spark-3", "org.apache.beam.runners.spark.SparkJobServerDriver"),
}

OPENS = ("java.base/java.lang java.base/java.lang.invoke java.base/java.lang.reflect "
         "java.base/java.io java.base/java.net java.base/java.nio java.base/java.util "
         "java.base/java.util.concurrent java.base/java.util.concurrent.atomic "
         "java.base/sun.nio.ch java.base/sun.nio.cs java.base/sun.security.action "
         "java.base/sun.util.calendar")
"""What Spark reaches into on Java 17 (its own launcher opens the same for the processes it
starts; the job server is started by Beam's `java -jar`)."""

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rag-evidence.engines</groupId><artifactId>{artifact}-job-server</artifactId>
  <version>1</version>
  <dependencies><dependency>
    <groupId>org.apache.beam</groupId><artifactId>{artifact}</artifactId><version>{beam}</version>
  </dependency></dependencies>
</project>
"""


TOOLS_HINT = "Java 17 and Maven (Debian: apt-get install openjdk-17-jre-headless maven)"


def missing_tools() -> str | None:
    """What this machine lacks to build the job servers and run the clusters, or None."""
    lacking = [tool for tool in ("java", _mvn()) if shutil.which(tool) is None]
    return f"{' and '.join(lacking)} on PATH: {TOOLS_HINT}" if lacking else None


def job_server_jar(engine: str) -> Path:
    """A jar that `java -jar` starts as `engine`'s Beam job server (`--flink_job_server_jar`,
    `--spark_job_server_jar`)."""
    artifact, main_class = RUNNERS[engine]
    folder = HOME / f"{engine}-job-server-{BEAM}"
    jar = folder / "job-server.jar"
    with _provisioning(folder) as done:
        if not done:
            (folder / "pom.xml").write_text(_POM.format(artifact=artifact, beam=BEAM))
            _check([_mvn(), "-B", "-q", "-f", str(folder / "pom.xml"),
                    "dependency:copy-dependencies", f"-DoutputDirectory={folder / 'lib'}"])
            jars = [f"lib/{name}" for name in sorted(os.listdir(folder / "lib"))]
            if engine == "spark":
                jars += _spark_jars(folder, {_artifact_of(name) for name in jars})
            _write_classpath_jar(jar, main_class, jars)
    return jar


def flink_home() -> Path:
    """A Flink distribution (`bin/`, `conf/`, `lib/`): the `pyflink` folder of PyPI's
    apache-flink, installed without its dependencies (it pins an old Beam) in a venv of its
    own."""
    return _distribution("flink", [f"apache-flink=={FLINK}", f"apache-flink-libraries=={FLINK}"],
                         "pyflink")


def spark_home() -> Path:
    """A Spark distribution (`bin/spark-class`, `jars/`): PyPI's pyspark."""
    return _distribution("spark", [f"pyspark=={SPARK}"], "pyspark")


def sdk_python(wheel: Path) -> Path:
    """The python of a venv holding Beam `BEAM` and `wheel` with its `semantic` extra, as a
    cluster's workers would: the launcher and the SDK workers run from it."""
    folder = HOME / f"sdk-beam-{BEAM}-py{sys.version_info.major}.{sys.version_info.minor}"
    python = folder / "bin" / "python"
    deps = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    with _provisioning(folder, key=deps) as done:
        if not done:
            venv.EnvBuilder(with_pip=True, clear=True).create(folder)
            _check([str(python), "-m", "pip", "install", "-q", f"apache-beam=={BEAM}",
                    f"{wheel}[semantic]"])
    # under the lock, and only when the code changed: two xdist workers reinstalling at once
    # (or one while the other's jobs import from the venv) broke pip's uninstall
    with _provisioning(folder, key=f"wheel-{_wheel_digest(wheel)}") as done:
        if not done:
            _check([str(python), "-m", "pip", "install", "-q", "--no-deps",
                    "--force-reinstall", str(wheel)])
            for old in folder.glob(".provisioned-wheel-*"):
                old.unlink()
    return python


def _wheel_digest(wheel: Path) -> str:
    """The digest of a wheel's files (its RECORD): the same for two builds of the same code,
    which the wheel's own bytes (zip timestamps) are not."""
    with zipfile.ZipFile(wheel) as archive:
        (record,) = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        return hashlib.sha256(archive.read(record)).hexdigest()[:12]


def _distribution(name: str, requirements: list[str], package: str) -> Path:
    folder = HOME / f"{name}-{requirements[0].split('==')[1]}"
    with _provisioning(folder) as done:
        if not done:
            venv.EnvBuilder(with_pip=True, clear=True).create(folder)
            _check([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                    *requirements])
    (home,) = folder.glob(f"lib/python*/site-packages/{package}")
    return home


def _spark_jars(folder: Path, beams: set[str]) -> list[str]:
    """Spark's own jars (the runner's Spark dependencies are `provided`), linked beside the
    runner's, but not those the runner brings in another version."""
    spark = folder / "spark"
    spark.mkdir(exist_ok=True)
    names = []
    for jar in sorted((spark_home() / "jars").glob("*.jar")):
        if _artifact_of(jar.name) in beams:
            continue
        link = spark / jar.name
        if not link.is_symlink():
            link.symlink_to(jar)
        names.append(f"spark/{jar.name}")
    return names


def _artifact_of(jar_name: str) -> str:
    return Path(jar_name).name.rsplit("-", 1)[0]


def _write_classpath_jar(jar: Path, main_class: str, classpath: list[str]) -> None:
    lines = ["Manifest-Version: 1.0", f"Main-Class: {main_class}",
             _wrapped(f"Add-Opens: {OPENS}"), "Add-Exports: java.base/sun.nio.ch",
             _wrapped("Class-Path: " + " ".join(classpath))]
    partial = jar.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "\n".join(lines) + "\n")
    partial.replace(jar)


def _wrapped(line: str) -> str:
    """A manifest line cut at 72 bytes, each continuation starting with a space."""
    chunks = [line[:72]] + [line[i:i + 71] for i in range(72, len(line), 71)]
    return "\n ".join(chunks)


@contextlib.contextmanager
def _provisioning(folder: Path, key: str = "done") -> Iterator[bool]:
    """Holds a lock on `folder` while it is provisioned (xdist workers, two sessions), and says
    whether it already was; a provisioning that failed is done again."""
    HOME.mkdir(parents=True, exist_ok=True)
    marker = folder / f".provisioned-{key}"
    with open(HOME / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = marker.exists()
        folder.mkdir(exist_ok=True)
        yield done
        marker.touch()


def _mvn() -> str:
    return os.environ.get("MVN", "mvn")


def _check(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={k: v for k, v in os.environ.items()
                               if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n"
                           f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
