"""An ONNX rendition of a verified packaged model, made once on this machine from its checked
torch weights (torch's exporter; no network), for the onnx backend.

Its folder holds the source's configuration and tokenizer (each checked against the digests kept
for the source), `model.onnx` (the transformer: opset 17, any batch and length), and
`export.json`: the source's fingerprint, the SHA-256 of `model.onnx` and the torch version that
exported it. The export's digest cannot be kept in code (it depends on torch's exporter), so a
later load checks `model.onnx` against that record, made when the export was checked against
torch's own output; the record finds a damaged or replaced file, not one replaced together with it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from core.errors import ConfigError
from core.file_digest import file_sha256

EXPORT_RECORD = "export.json"
WEIGHTS = "model.safetensors"
EXPORTER = ("torch", "transformers", "onnx", "onnxruntime")
SAMPLES = ("How do I read a JSON document from a string?",
           "Push an item onto the heap, keeping the heap invariant.", "x")
TOLERANCE = 1e-3
"""The largest difference allowed between a token vector of the export and torch's."""


def exporter_installed() -> bool:
    """Whether this machine can make an export (torch, transformers, onnx, onnxruntime)."""
    return all(importlib.util.find_spec(name) is not None for name in EXPORTER)


def export_rendition(source: Path, staging: Path, checked: dict[str, str], source_print: str,
                     field: str, install: str) -> None:
    """Writes into `staging` the rendition of the verified folder `source`: its `checked` files
    but the weights, `model.onnx` exported from them, and `export.json`.

    Raises:
        ConfigError: the exporter is not installed, or the export's token vectors are not
            torch's.
    """
    if not exporter_installed():
        raise ConfigError(field, source.name, f"its ONNX rendition is made once with torch and "
                                              f"onnx, which are not installed: {install}")
    for path in checked:
        if path != WEIGHTS:
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / path, staging / path)
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(source, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    inputs = tokenizer(list(SAMPLES), padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask"]
    with torch.no_grad():
        expected = model(**{n: inputs[n] for n in names}).last_hidden_state.numpy()
        torch.onnx.export(model, tuple(inputs[n] for n in names), str(staging / "model.onnx"),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "tokens"}
                                        for n in [*names, "last_hidden_state"]},
                          opset_version=17, dynamo=False)
    _check_against(staging / "model.onnx", {n: inputs[n].numpy() for n in names}, expected,
                   field, source.name)
    record = {"source": source_print, "model.onnx": file_sha256(staging / "model.onnx"),
              "torch": torch.__version__}
    (staging / EXPORT_RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")


def _check_against(onnx: Path, inputs: dict, expected: object, field: str, name: str) -> None:
    import numpy as np
    import onnxruntime

    session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    (found,) = session.run(["last_hidden_state"], inputs)
    worst = float(np.max(np.abs(found - np.asarray(expected))))
    if worst > TOLERANCE:
        raise ConfigError(field, name, f"its ONNX export differs from torch by {worst:.2g} "
                                       f"(more than {TOLERANCE:g}): it is not kept")


def export_problem(folder: Path, source_print: str, digest: Callable[[Path], str]
                   ) -> str | None:
    """What is wrong with the export in `folder` against its record (None: nothing);
    `digest` gives a file's SHA-256 ("missing" when there is none)."""
    try:
        record = json.loads((folder / EXPORT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{folder / EXPORT_RECORD} is missing or no JSON"
    if not isinstance(record, dict) or record.get("source") != source_print:
        return f"{folder / EXPORT_RECORD} names another source than {source_print}"
    found, exported = digest(folder / "model.onnx"), record.get("model.onnx")
    if found != exported:
        return f"{folder / 'model.onnx'} has SHA-256 {found}, not the exported {exported}"
    return None
