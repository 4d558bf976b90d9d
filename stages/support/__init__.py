"""The Beam support every step shares: per-query DoFns that fail one query, not the bundle;
dead letters; counters; one embedder per worker; resources a DoFn owns; progress. It knows
the records (`stages.models`) and no step."""
