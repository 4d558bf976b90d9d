"""Models that score a query against a passage (cross-encoders), for the Rerank step."""
