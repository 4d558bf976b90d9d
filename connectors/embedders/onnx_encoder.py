"""A sentence-transformers model folder run by ONNX Runtime: no PyTorch.

The folder's own files say what to do, as sentence-transformers reads them: `modules.json`
(a Transformer, a Pooling, optionally a Normalize), the pooling's `config.json`,
`sentence_bert_config.json` (`max_seq_length`, `do_lower_case`), `tokenizer.json`, and the
transformer as `model.onnx` (or `onnx/model.onnx`). A model with other modules (Dense layers,
for one) is refused with a clear error: run it with `embedder.backend: torch`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from connectors.embedders.fork_safe import fork_safe_tokenizers
from core.errors import ConfigError

ONNX_FILES = ("model.onnx", "onnx/model.onnx")
POOLING_MODES = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
BATCH_TOKENS = 2048
"""At most this many tokens (texts x the longest) per forward pass, within the batch size:
long texts go in smaller batches, which ONNX Runtime runs faster (docs/benchmarks.md); short
queries stay far under it."""


@dataclass(frozen=True)
class ModelLayout:
    """What a model folder's files say: the ONNX file, the tokenizer, the longest input in
    tokens, lower-casing, the pooling mode, the output dimension and whether it normalizes."""

    onnx: Path
    tokenizer: Path
    max_seq_length: int
    lower_case: bool
    pooling: str
    dimension: int
    normalizes: bool


def read_layout(directory: Path) -> ModelLayout:
    """The layout of the sentence-transformers model in `directory`, each value read from its
    files checked as our own settings are.

    Raises:
        ConfigError: a file is missing or malformed, a value has the wrong type or range
            (named with its file), or the model has a module this backend cannot run.
    """
    modules = _json(directory / "modules.json")
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise _bad_value(directory / "modules.json", "modules", modules, "a list of objects")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    unknown = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if unknown or "Transformer" not in kinds or kinds.count("Pooling") != 1:
        raise ConfigError("embedder.backend", "onnx",
                          f"the model in {directory} has the modules {kinds}; the onnx backend "
                          "runs Transformer, one Pooling and Normalize only: use backend: torch")
    (pooling_path,) = [str(m.get("path", "")) for m in modules if str(m.get("type")).endswith(
        ".Pooling")]
    pooling_file = directory / pooling_path / "config.json"
    pooling = _object(pooling_file)
    modes = [mode for mode in POOLING_MODES if _value(pooling_file, pooling,
                                                      f"pooling_mode_{mode}", bool, False)]
    if len(modes) != 1:
        raise ConfigError("embedder.backend", "onnx",
                          f"the model's pooling ({pooling_file}) sets {modes or 'no mode'}; "
                          f"the onnx backend runs exactly one of {list(POOLING_MODES)}: use "
                          "backend: torch")
    settings_file = directory / "sentence_bert_config.json"
    settings = _object(settings_file)
    onnx = next((directory / name for name in ONNX_FILES if (directory / name).is_file()), None)
    if onnx is None:
        raise ConfigError("embedder.backend", "onnx",
                          f"{directory} holds no {' or '.join(ONNX_FILES)}: export the model "
                          "to ONNX there, or install the torch extra (pip install "
                          "'rag-evidence[torch]') and use backend: auto or torch")
    return ModelLayout(onnx, _file(directory / "tokenizer.json"),
                       _value(settings_file, settings, "max_seq_length", int, 512),
                       _value(settings_file, settings, "do_lower_case", bool, False), modes[0],
                       _value(pooling_file, pooling, "word_embedding_dimension", int, None),
                       "Normalize" in kinds)


def _object(path: Path) -> dict[str, Any]:
    data = _json(path)
    if not isinstance(data, dict):
        raise _bad_value(path, "the file", data, "a JSON object")
    return data


def _value(path: Path, data: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    """`data[key]` of the model file `path`: a `kind` (a positive whole number for int), or
    `default` when absent or null (a `default` of None: required)."""
    value = data.get(key)
    value = default if value is None else value
    if value is None:
        raise _bad_value(path, key, value, "set" + (" (a positive whole number)"
                                                    if kind is int else ""))
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise _bad_value(path, key, value, "a positive whole number")
    if kind is bool and not isinstance(value, bool):
        raise _bad_value(path, key, value, "true or false")
    return value


def _bad_value(path: Path, key: str, value: Any, wanted: str) -> ConfigError:
    return ConfigError("embedder.model", str(path.parent),
                       f"{path.name}: {key}={value!r} must be {wanted}")


class OnnxEncoder:
    """Runs a model folder's transformer with ONNX Runtime, then its pooling and normalization.

    Texts are cut to `max_seq_length` tokens as sentence-transformers cuts them, and batched
    by similar length (less padding, the same vectors), at most `BATCH_TOKENS` to a batch.
    """

    def __init__(self, layout: ModelLayout, *, batch_size: int = 64,
                 threads: int | None = None) -> None:
        fork_safe_tokenizers()
        import onnxruntime
        from tokenizers import Tokenizer

        self.layout = layout
        self._batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(layout.tokenizer))
        self._tokenizer.enable_truncation(max_length=layout.max_seq_length)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(
            str(layout.onnx), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        if not set(self._inputs) <= set(_INPUTS):
            raise ConfigError("embedder.backend", "onnx",
                              f"{layout.onnx} takes the inputs {self._inputs}; the onnx backend "
                              f"feeds {list(_INPUTS)}")

    def encode(self, texts: Sequence[str], normalize: bool) -> np.ndarray:
        """The float32 vectors of `texts`, one row each, in order."""
        texts = [text.strip() for text in texts]  # as sentence-transformers' Transformer
        if self.layout.lower_case:
            texts = [text.lower() for text in texts]
        encodings = self._tokenizer.encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        vectors = np.empty((len(texts), self.layout.dimension), dtype=np.float32)
        start = 0
        while start < len(order):  # shortest first: a batch's last text is its longest
            rows = order[start:start + self._batch_size]
            rows = rows[:max(1, BATCH_TOKENS // len(encodings[rows[-1]].ids))]
            vectors[rows] = self._pooled([encodings[i] for i in rows])
            start += len(rows)
        if normalize or self.layout.normalizes:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors /= np.maximum(norms, 1e-12)
        return vectors

    def _pooled(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        feed = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in _INPUTS}
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            feed["input_ids"][row, :size] = encoding.ids
            feed["attention_mask"][row, :size] = encoding.attention_mask
            feed["token_type_ids"][row, :size] = encoding.type_ids
        (tokens,) = self._session.run(None, {n: feed[n] for n in self._inputs})[:1]
        return _pool(np.asarray(tokens, dtype=np.float32), feed["attention_mask"],
                     self.layout.pooling)


def _pool(tokens: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers' `Pooling` over `tokens` (batch, sequence, dim)."""
    if mode == "cls_token":
        return np.asarray(tokens[:, 0])
    weights = mask[:, :, np.newaxis].astype(np.float32)
    if mode == "max_tokens":
        return np.asarray(np.where(weights > 0, tokens, -1e9).max(axis=1))
    sums = (tokens * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    return np.asarray(sums / (np.sqrt(counts) if mode == "mean_sqrt_len_tokens" else counts))


def _json(path: Path) -> Any:
    try:
        return json.loads(_file(path).read_text(encoding="utf-8"))
    except ValueError as error:
        raise ConfigError("embedder.model", str(path.parent), f"{path.name}: {error}") from None


def _file(path: Path) -> Path:
    if not path.is_file():
        raise ConfigError("embedder.model", str(path.parent),
                          f"holds no {path.name}, which the onnx backend reads")
    return path
