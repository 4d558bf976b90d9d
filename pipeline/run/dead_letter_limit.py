"""`run --max-dead-letters`: how many failed queries a scheduled run tolerates before it exits
1 (its results are written all the same)."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import ConfigError

OPTION = "--max-dead-letters"


@dataclass(frozen=True)
class DeadLetterLimit:
    """At most `count` dead letters, or at most `percent` % of the queries."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, text: str) -> DeadLetterLimit:
        """`N` (a count) or `N%` (a share of the run's queries).

        Raises:
            ConfigError: anything else, naming the option and the value.
        """
        spelled = text.strip()
        try:
            if spelled.endswith("%"):
                percent = float(spelled[:-1])
                if 0 <= percent <= 100:
                    return cls(percent=percent)
            elif int(spelled) >= 0:
                return cls(count=int(spelled))
        except ValueError:
            pass
        raise ConfigError(OPTION, text, "must be a count of dead letters (10) or a share of "
                                        "the queries from 0% to 100% (5%)")

    def exceeded(self, dead_letters: int, queries: int) -> bool:
        if self.count is not None:
            return dead_letters > self.count
        assert self.percent is not None
        return queries > 0 and dead_letters * 100 > self.percent * queries

    def __str__(self) -> str:
        return f"{self.count}" if self.count is not None else f"{self.percent:g}%"
