"""Every exception rag-evidence raises, under one base class.

Each message names the field (or setting) and the bad value, so a dead-letter line or a
failed start-up says what to fix without reading the code.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

_URL_CREDENTIALS = re.compile(r"(?<=://)[^@\s'\"]*@|(?<![\w/:])[^\s'\"/@:]+:(?!//)[^@\s'\"]*@")
"""`scheme://user:password@`, whatever the password holds (`/`, `?`, `#`), and `user:pw@host`."""
_SECRETS: set[str] = set()
_SHORTEST_SECRET = 4


def register_secret(secret: str) -> None:
    """Makes `redact` hide `secret` (and its base64 form, as an Authorization header carries
    it) wherever it appears, in this process, from now on."""
    if len(secret) >= _SHORTEST_SECRET:
        _SECRETS.update({secret, base64.b64encode(secret.encode("utf-8", "replace")).decode()})


def redact(text: str) -> str:
    """`text` with the user and password of any URL in it, and every registered secret,
    replaced by `***`."""
    text = _URL_CREDENTIALS.sub("***@", text)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


class RagEvidenceError(Exception):
    """Base class of all errors raised by rag-evidence. Messages never show the credentials
    of a URL (`http://user:password@host` reads `http://***@host`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigError(RagEvidenceError):
    """A setting is unknown, malformed, or out of range."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"config {key}={value!r}: {reason}")

    @classmethod
    def listing(cls, key: str, value: object, lines: Sequence[str]) -> ConfigError:
        """One error for several invalid settings, each line `key=value (from ...): reason`."""
        error = cls(key, value, "")
        text = lines[0] if len(lines) == 1 else f"{len(lines)} invalid settings: " + "; ".join(
            lines)
        RagEvidenceError.__init__(error, f"config {text}")
        return error


class InvalidInputError(RagEvidenceError):
    """An input record (query line, chunk record) has a bad field."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        """A record's value is shown up to 80 characters; a command-line flag's (`--queries`, a
        path) whole, since a path cut short names no file."""
        self.field = field
        self.value = value
        shown = repr(value) if field.startswith("--") else _short(value)
        super().__init__(f"{field}={shown}: {reason}")


class InputLineError(InvalidInputError):
    """A line of an input file that is no record; names its `file:line` once, then what is
    wrong (`problem`, which a failure record keeps beside the line's place)."""

    def __init__(self, where: str, problem: str, field: str = "line",
                 value: object = None) -> None:
        self.where = where
        self.problem = problem
        self.field = field
        self.value = value
        RagEvidenceError.__init__(self, f"{where}: {problem}")


class DocumentError(RagEvidenceError):
    """A document of `--docs` that cannot be indexed (a folder, a pipe, binary, not UTF-8)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"{path}: {reason}")


class DimensionMismatchError(RagEvidenceError):
    """A vector's length differs from the store's or embedder's dimension."""

    def __init__(self, field: str, actual: int, expected: int) -> None:
        self.field = field
        self.actual = actual
        self.expected = expected
        super().__init__(
            f"{field} has {actual} dimensions but the store expects {expected}"
        )


class EmbedderMismatchError(RagEvidenceError):
    """The configured embedder is not the one that built the store: its query vectors would
    land in another space, and the answers would be wrong without any error."""

    def __init__(self, store: str, stored: str, configured: str) -> None:
        super().__init__(
            f"{store} was built with {stored}, but the configured embedder is {configured}; "
            "text queries need the embedder that built the store: set embedder.* to match it, "
            "or rebuild the store with the configured one (`rag-evidence index --rebuild`: "
            "index alone refuses another embedder)")


class KnowledgeSearchError(RagEvidenceError):
    """A search (or a request to the store) failed."""


class SearchUnavailableError(KnowledgeSearchError):
    """The search backend could not be reached or kept failing after all retries."""


class SearchRejectedError(KnowledgeSearchError):
    """The backend refused the request itself (bad filter, bad mapping, 4xx): do not retry."""


class StoreNotFoundError(KnowledgeSearchError):
    """The configured store (directory or index) does not exist or is not usable."""


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class EmbedderChangedError(RagEvidenceError):
    """An `index` would add chunks of another embedder to a store built by one: its old
    chunks' vectors and the new ones would not be comparable."""

    def __init__(self, store: str, stored: str, configured: str) -> None:
        self.stored = stored
        self.configured = configured
        super().__init__(
            f"{store} holds {stored}, but this index brings {configured}; the two cannot "
            "share a store: index with --rebuild to replace everything, or set embedder.* "
            "to match the store")

    @staticmethod
    def described(embedder: object | None) -> str:
        """What chunks of `embedder` (an `EmbedderInfo`, or None: vectors a chunk file
        carried) are, in words."""
        describe = getattr(embedder, "describe", None)
        return f"chunks embedded with {describe()}" if describe else "vectors from a chunk file"


class RebuildIncompleteError(RagEvidenceError):
    """A `--rebuild` whose input did not all read, embed and write: committed, it would drop
    the stored chunks that failed."""

    def __init__(self, failed: int) -> None:
        self.failed = failed
        super().__init__(
            f"--rebuild: {failed} chunks failed (see the log, or --failures), and a rebuild is "
            "committed only whole: the embedded store keeps its current version (Elasticsearch, "
            "which has no transactions, keeps what was written); fix the input and rebuild "
            "again")


class WallTimeExceededError(RagEvidenceError):
    """A job ran past its `job.max-wall-time` and was cancelled; nothing was committed. Not a
    refusal (exit 2): the job was started, so the CLI exits 3, as for a crash."""

    def __init__(self, limit_seconds: float, runner: str) -> None:
        self.limit_seconds = limit_seconds
        super().__init__(f"the job ran past job.max-wall-time={limit_seconds:g} s on "
                         f"{runner} and was cancelled; nothing was committed (no manifest, "
                         "the store keeps its version)")
