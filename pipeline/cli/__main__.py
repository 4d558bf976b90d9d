"""`python -m pipeline.cli COMMAND ...`: the `rag-evidence` command where only a Python
interpreter is named, as Airflow's BeamRunPythonPipelineOperator names one
(docs/scheduled-jobs.md)."""

from pipeline.cli.main import console

console()
