"""The rules every layer holds to, below the adapters: a chunk's identity and fingerprint,
settings bounds, input limits, the error types, and vector checks. It imports nothing of ours,
and no I/O library."""
