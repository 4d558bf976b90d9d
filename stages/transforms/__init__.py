"""The steps as Beam transforms: each applies its stage's functions (`stages/<step>.py`) to a
PCollection, per query or per batch, with its dead letters and counters."""
