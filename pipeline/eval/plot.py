"""`eval --plot FILE.png`: nDCG@k and Recall@k for k = 1..20, one line per config."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from core.errors import ConfigError
from pipeline.eval.runner import EvalRow
from pipeline.io.json_file import staged_path

INSTALL_HINT = ("install the plot extra: pip install 'rag-evidence[plot]' (from a clone of the "
                "repository: pip install -e '.[plot]')")
FORMATS = ("png", "pdf", "svg", "jpg", "jpeg")
"""The image formats `--plot` draws, by the file's suffix (matplotlib's own writers)."""


def check_plot_path(path: str) -> None:
    """Refuses, before any evaluation, a `--plot` that could not be drawn: matplotlib is not
    installed, or the file's suffix names no format of `FORMATS`.

    Raises:
        ConfigError: naming `--plot`, the path and what to do.
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ConfigError("--plot", path, f"must end in one of "
                          f"{', '.join('.' + f for f in FORMATS)}, the image formats it draws")
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("--plot", path, INSTALL_HINT)


_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))
"""Line and marker per config in turn, so that two identical curves both show."""


def y_range(rows: Sequence[EvalRow]) -> tuple[float, float]:
    """The y axis: from a little under the lowest value drawn (at a tenth), not from 0, so
    that close curves are told apart; up to just over 1."""
    values = [v for row in rows for s in row.curve.values() for v in (s.ndcg, s.recall)]
    low = min(values, default=0.0)
    return max(0.0, int(low * 10) / 10 - 0.05), 1.02


def plot_curves(rows: Sequence[EvalRow], path: str | Path, title: str = "") -> None:
    """Draws each row's nDCG@k and Recall@k curves side by side into a PNG at `path`, under
    `title` (which question set, which level of judgments).

    Raises:
        ConfigError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no screen needed
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as error:
        raise ConfigError("--plot", str(path), f"{INSTALL_HINT} ({error})") from None
    figure, (ndcg, recall) = plt.subplots(1, 2, figsize=(11, 4.5), sharex=True)
    for number, row in enumerate(rows):
        cuts = sorted(row.curve)
        line, marker = _STYLES[number % len(_STYLES)]
        for axes, values in ((ndcg, [row.curve[k].ndcg for k in cuts]),
                             (recall, [row.curve[k].recall for k in cuts])):
            axes.plot(cuts, values, linestyle=line, marker=marker, markersize=3, alpha=0.8,
                      label=row.label)
    if title:
        figure.suptitle(title)
    for axes, name in ((ndcg, "nDCG@k"), (recall, "Recall@k")):
        axes.set_title(name)
        axes.set_xlabel("k (evidence blocks read)")
        axes.set_ylim(*y_range(rows))
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
    recall.legend(loc="lower right")
    figure.tight_layout()
    staged = staged_path(str(path))  # a failed draw leaves the older plot whole
    try:
        figure.savefig(staged, dpi=110, format=Path(path).suffix.lower().lstrip("."))
        os.replace(staged, path)
    finally:
        plt.close(figure)
        Path(staged).unlink(missing_ok=True)
