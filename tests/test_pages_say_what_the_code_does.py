"""The pages say what the code does: every key of a shipped config is a documented setting
whose listed values (`a | b` in its comment) are the ones it takes, and every configuration
error quoted in docs/ is the message the code prints for that input, and the README says which
configurations continue a night from its state."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from connectors.embedded.versions import current_version
from connectors.embedded.writer import write_store
from core.errors import ConfigError
from pipeline.config import reference
from pipeline.config.loader import load_settings
from pipeline.run.continuation_plan import why_not_kept
from tests.builders import chunk_records, unit_vectors

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
ROWS = {row.key: row for row in reference.rows()}
QUOTED_ERROR = re.compile(r"`([a-z][\w.-]*(?:=[^`\s]*)? \(from (?!SOURCE)[^)`]+\): [^`]+)`")


def _keys(data: Any, prefix: str = "") -> list[str]:
    if not isinstance(data, dict):
        return [prefix]
    if prefix in ROWS:  # a setting whose value is a mapping (rag.recall.weights)
        return [prefix]
    return [key for name, value in data.items() for key in _keys(
        value, f"{prefix}.{name}" if prefix else str(name))]


def _listed_values(path: Path) -> dict[str, list[str]]:
    """Each key whose comment lists values as `a (what) | b | c`: those values."""
    listed, stack = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"( *)([\w-]+):(.*)", line)
        if not match or line.lstrip().startswith("#"):
            continue
        depth = len(match.group(1)) // 2
        stack[depth:] = [match.group(2)]
        comment = re.sub(r"\([^)]*\)", "", match.group(3).partition("#")[2])
        if " | " in comment:  # "dense | lexical | hybrid", "or a | b | c: what they are"
            first, *rest = comment.split(" | ")
            listed[".".join(stack)] = [first.split()[-1], *(
                part.split()[0].rstrip(":;,") for part in rest)]
    return listed


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_key_of_a_shipped_config_is_a_documented_setting(path: Path) -> None:
    keys = _keys(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert [key for key in keys if key not in ROWS] == []
    for key, values in _listed_values(path).items():
        allowed = re.findall(r"`([^`]+)`", ROWS[key].bounds)
        assert allowed and set(values) <= set(allowed), (key, values, ROWS[key].bounds)


def _quoted_errors() -> list[tuple[str, str]]:
    return [(page.name, quoted) for page in PAGES
            for quoted in QUOTED_ERROR.findall(page.read_text(encoding="utf-8"))]


def test_the_pages_quote_configuration_errors() -> None:
    assert len(_quoted_errors()) >= 2  # the pattern below still finds what the pages quote


@pytest.mark.parametrize(("page", "quoted"), _quoted_errors())
def test_a_quoted_configuration_error_is_what_the_code_prints(
        page: str, quoted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setting, source = re.match(r"(\S+) \(from ([^)]+)\)", quoted).groups()  # type: ignore[union-attr]
    key, _, value = setting.partition("=")
    value = value or "1"
    *sections, name = key.split(".")
    monkeypatch.chdir(tmp_path)
    config, environ, overrides = None, {}, []
    if source.startswith("file "):
        config = source.removeprefix("file ")
        nested: Any = {name: yaml.safe_load(value)}
        for section in reversed(sections):
            nested = {section: nested}
        Path(config).write_text(yaml.safe_dump(nested), encoding="utf-8")
    elif source == "--set":
        overrides = [f"{key}={value}"]
    else:
        environ = {source: value}
    with pytest.raises(ConfigError) as raised:
        load_settings(config, environ=environ or dict(os.environ), overrides=overrides)
    assert str(raised.value) == f"config {quoted}", page


README_CONTINUES = {
    (): (True, "dense (flat index"),
    ("rag.recall.mode=lexical",): (True, "lexical or hybrid recall"),
    ("rag.recall.mode=hybrid",): (True, "lexical or hybrid recall"),
    ("search.embedded.index=hnsw",): (True, "or HNSW with the continued lists' recall audited"),
    ("search.backend=elasticsearch",): (True, "Elasticsearch index that `index` wrote"),
    ("search.backend=elasticsearch", "rag.recall.mode=hybrid"): (
        True, "dense, lexical and hybrid nights continue"),
}
"""Each configuration the README's `run` row names: whether a night on it continues from the
state (on a store `index` just built), and the words that say so."""


@pytest.mark.parametrize("overrides", README_CONTINUES, ids=lambda v: ",".join(v) or "default")
def test_the_readme_says_which_configurations_continue_a_night(
        overrides: tuple[str, ...], tmp_path: Path) -> None:
    continues, words = README_CONTINUES[overrides]
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| `rag-evidence run "))
    store = tmp_path / "store"
    write_store(store, chunk_records(unit_vectors(20, dim=8, seed=1)),
                index="hnsw" if "search.embedded.index=hnsw" in overrides else "flat")
    settings = load_settings(overrides=[f"search.embedded.path={store}", *overrides])
    assert (why_not_kept(settings, current_version(store)) is None) is continues
    assert words in row
