"""A sentence-transformers `CrossEncoder` from a local folder, as the Rerank step's scorer:
loaded on first use, once per process (a Beam worker loads it once, as it does the embedder),
and pickled as its folder and fingerprint, never as weights. No model is downloaded: the
folder must hold the model (`pip install 'rag-evidence[torch]'` brings sentence-transformers).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connectors.embedders.fork_safe import fork_safe_tokenizers
from connectors.embedders.model_fingerprint import model_fingerprint
from core.errors import ConfigError

FIELD = "rag.rerank.model"
_INSTALL = "needs sentence-transformers: pip install 'rag-evidence[torch]'"


class CrossEncoderScorer:
    """Scores each passage against a query text with the cross-encoder in `folder`
    (`score(text, passages)`, one float each, higher more relevant).

    Raises (on construction):
        ConfigError: `folder` is no folder holding a model (`config.json`), or
            sentence-transformers is not installed.
    """

    def __init__(self, folder: str, batch_size: int = 32) -> None:
        path = Path(folder).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(FIELD, folder, "is no model folder (it has no config.json): "
                                             "give the folder a cross-encoder was saved to")
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigError(FIELD, folder, _INSTALL)
        self.folder = str(path.resolve())
        self.fingerprint = model_fingerprint(path)
        self.batch_size = batch_size

    def score(self, text: str, passages: Sequence[str]) -> list[float]:
        """Each passage's score against `text`, in order."""
        if not passages:
            return []
        model = _loaded(self.folder, self.fingerprint)
        scores = model.predict([(text, passage) for passage in passages],
                               batch_size=self.batch_size, show_progress_bar=False,
                               convert_to_numpy=True)
        return [float(s) for s in scores]

    def described(self) -> dict[str, str]:
        """What the manifest says of the model: its folder and fingerprint."""
        return {"model": self.folder, "fingerprint": self.fingerprint}


_LOADED: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def _loaded(folder: str, fingerprint: str) -> Any:
    """The model of `folder` (as it was fingerprinted), loaded once per process.

    Raises:
        ConfigError: sentence-transformers is not installed, or the folder holds no
            cross-encoder it can load.
    """
    key = (folder, fingerprint)
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = _load(folder)
        return _LOADED[key]


def _load(folder: str) -> Any:
    try:
        from sentence_transformers import CrossEncoder
    except ImportError:
        raise ConfigError(FIELD, folder, _INSTALL) from None
    fork_safe_tokenizers()
    try:
        return CrossEncoder(folder, device="cpu", local_files_only=True)
    except (OSError, ValueError) as error:
        raise ConfigError(FIELD, folder, f"cannot be loaded as a cross-encoder: {error}"
                          ) from None
