"""Hugging Face tokenizers deadlock in a worker process forked after they ran threads: both
backends turn their threads off unless the user chose."""

from __future__ import annotations

import logging
import os

_log = logging.getLogger(__name__)


def fork_safe_tokenizers() -> None:
    """Sets TOKENIZERS_PARALLELISM=false for this process, unless it is set already."""
    if "TOKENIZERS_PARALLELISM" not in os.environ:
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        _log.info("set TOKENIZERS_PARALLELISM=false for this process (tokenizers' threads do "
                  "not survive a fork); set it yourself to choose")
