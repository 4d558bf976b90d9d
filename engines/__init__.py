"""Local Flink and Spark clusters for Beam's portable runners, and what they run on: the job
servers from Maven Central, Flink and Spark from PyPI, and the workers' venv (Beam and this
checkout's wheel). A tool of the checkout, not packaged: `python -m engines --help`, and
docs/runners.md."""
