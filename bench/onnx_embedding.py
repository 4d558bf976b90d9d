"""ONNX Runtime against PyTorch for all-MiniLM-L6-v2 on this CPU: speed and agreement.

sentence-transformers' own ONNX backend (`backend="onnx"`) needs `optimum-onnx`, which does not
install beside sentence-transformers 6 (pip: ResolutionImpossible: it pins transformers 4). So
this exports the model's transformer with `torch.onnx.export` once into the model cache and
runs it with onnxruntime (mean pooling and normalization as the model's own modules do), which
is what that backend does. Prints texts/s of each on short queries and on 800-character
chunks, the ratio ORT / torch, and the lowest cosine between the two embeddings of a text.

    python bench/onnx_embedding.py [--short 2000] [--long 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ as a package

from bench.embedding_throughput import texts
from connectors.embedders.model_location import CACHE_ENV, MINILM, locate_model
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder


def export(model: object, tokenizer: object, path: Path) -> None:
    import torch

    sample = tokenizer(["an example"], return_tensors="pt")  # type: ignore[operator]
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Encoder(torch.nn.Module):  # the transformer, called by keyword as the model calls it
        def __init__(self) -> None:
            super().__init__()
            self.inner = model[0].auto_model  # type: ignore[index]

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state

    torch.onnx.export(Encoder().eval(), tuple(sample[n] for n in names), str(path),
                      input_names=names, output_names=["last_hidden_state"], opset_version=17,
                      dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names,
                                                                          "last_hidden_state"]})


class OrtEmbedder:
    def __init__(self, path: Path, tokenizer: object, batch_size: int) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self._session = onnxruntime.InferenceSession(str(path), options,
                                                     providers=["CPUExecutionProvider"])
        self._names = [i.name for i in self._session.get_inputs()]
        self._tokenizer, self._batch = tokenizer, batch_size

    def embed(self, batch: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(batch), self._batch):
            tokens = self._tokenizer(batch[start:start + self._batch], padding=True,  # type: ignore[operator]
                                     truncation=True, max_length=256, return_tensors="np")
            (hidden,) = self._session.run(None, {n: tokens[n].astype(np.int64)
                                                 for n in self._names})
            mask = tokens["attention_mask"][..., np.newaxis].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out)


def best(repeats: int, fn, batch: list[str]) -> float:  # type: ignore[no-untyped-def]
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(batch)
        seconds.append(time.perf_counter() - started)
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--long", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault(CACHE_ENV, scratch)
        onnx_file = locate_model(MINILM) / "onnx" / "encoder.onnx"
        embedder = SentenceTransformerEmbedder(MINILM, batch_size=args.batch)
        model = embedder._model  # the library's own model, as a user would load it
        if not onnx_file.is_file():
            onnx_file.parent.mkdir(exist_ok=True)
            started = time.perf_counter()
            export(model, model.tokenizer, onnx_file)
            print(f"exported to {onnx_file} once, in {time.perf_counter() - started:.1f} s")
        ort = OrtEmbedder(onnx_file, model.tokenizer, args.batch)

        def torch_embed(batch: list[str]) -> np.ndarray:
            return np.asarray(model.encode(batch, batch_size=args.batch, show_progress_bar=False,
                                           normalize_embeddings=True, convert_to_numpy=True))

        for label, batch in (("short queries", texts(args.short, 40, 1)),
                             ("800-char chunks", texts(args.long, 800, 2))):
            torch_embed(batch[:8]), ort.embed(batch[:8])  # warm up both
            torch_s, ort_s = best(args.repeats, torch_embed, batch), best(args.repeats,
                                                                          ort.embed, batch)
            cosine = float(np.min(np.sum(torch_embed(batch) * ort.embed(batch), axis=1)))
            print(f"{label:>15}: torch {len(batch) / torch_s:7.1f} texts/s, onnxruntime "
                  f"{len(batch) / ort_s:7.1f} texts/s, ort / torch {torch_s / ort_s:.2f}x, "
                  f"lowest cosine {cosine:.6f}", flush=True)


if __name__ == "__main__":
    main()
