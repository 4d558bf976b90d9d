"""`eval --plot FILE.png`: nDCG@k and Recall@k for k = 1..20, one line per config."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.errors import ConfigError
from pipeline.eval.runner import EvalRow

INSTALL_HINT = "install the plot extra: pip install 'rag-evidence[plot]'"


def plot_curves(rows: Sequence[EvalRow], path: str | Path) -> None:
    """Draws each row's nDCG@k and Recall@k curves side by side into a PNG at `path`.

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
    for row in rows:
        cuts = sorted(row.curve)
        ndcg.plot(cuts, [row.curve[k].ndcg for k in cuts], marker="o", markersize=3,
                  label=row.label)
        recall.plot(cuts, [row.curve[k].recall for k in cuts], marker="o", markersize=3,
                    label=row.label)
    for axes, title in ((ndcg, "nDCG@k"), (recall, "Recall@k")):
        axes.set_title(title)
        axes.set_xlabel("k (evidence blocks read)")
        axes.set_ylim(0, 1.02)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
    recall.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(str(path), dpi=110)
    plt.close(figure)
