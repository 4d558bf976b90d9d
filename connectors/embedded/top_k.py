"""Top-k selection over a block of similarity rows."""

from __future__ import annotations

import numpy as np

NO_ROWS = np.zeros(0, dtype=np.int64)


def top_rows(similarities: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row: the column numbers of the `k` best scores, best first (ties: lower column), and
    those scores."""
    columns = similarities.shape[1]
    k = min(k, columns)
    if k == 0:
        return [(NO_ROWS, NO_ROWS) for _ in range(similarities.shape[0])]
    candidates = np.argpartition(similarities, columns - k, axis=1)[:, columns - k:]
    result = []
    for row, picked in zip(similarities, candidates, strict=True):
        picked = _lowest_columns_on_ties(row, picked)
        scores = row[picked]
        order = np.lexsort((picked, -scores))
        result.append((picked[order], scores[order]))
    return result


def _lowest_columns_on_ties(row: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """`picked` (the k best, as argpartition chose them), with the columns that tie the k-th
    best score replaced by the lowest such columns of the whole row."""
    threshold = row[picked].min()
    tied = np.flatnonzero(row == threshold)
    if len(tied) == np.count_nonzero(row[picked] == threshold):
        return picked
    above = picked[row[picked] > threshold]
    return np.concatenate([above, tied[:len(picked) - len(above)]])
