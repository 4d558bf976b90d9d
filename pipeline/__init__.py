"""Configuration, wiring, the CLI and runners of rag-evidence."""
