"""What `explain` does, given parsed arguments: it imports no Beam (the stages' functions run
in this process, outside any pipeline)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping

from pipeline.cli.explain_report import explanation_text
from pipeline.config.loader import load_settings
from pipeline.run.explain import explain, query_of


def explain_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """One query through every stage, printed as tables (or JSON with `--json`)."""
    settings = load_settings(args.config, environ, args.overrides)
    explained = explain(settings, query_of(args.query, args.filters))
    print(json.dumps(explained.to_dict(), indent=1) if args.json
          else explanation_text(explained))
    return 0
