"""A tiny cross-encoder with random weights, built and saved here: what the Rerank step's tests
(and the plumbing row of docs/evaluation.md) load, since no cross-encoder ships its weights on
PyPI. Its scores mean nothing; it proves the plumbing, never quality.

    python -m tests.tiny_cross_encoder FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build(folder: Path, seed: int = 0) -> Path:
    """Saves a one-layer BERT sequence classifier (one label) and its word-piece tokenizer
    to `folder`, from `seed`; returns `folder`."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    vocab = [*SPECIAL, *letters, *(f"##{c}" for c in letters)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
