"""One injectable clock for the service and the jobs, so that time can be simulated ("as of")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


class Clock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class FixedClock(Clock):
    """A clock stopped at one instant (tests, ``--now`` runs)."""

    at: datetime

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware datetime")

    def now(self) -> datetime:
        return self.at
