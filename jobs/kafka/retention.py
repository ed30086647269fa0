"""May a new store rebuild from a Kafka topic? The retention guard's decision (pure).

A migration replays the topic from its earliest retained offsets. If retention already deleted
records the old store consumed (the topic's earliest offset of a partition is past the first
offset the old store read there), the new store's results would silently miss them. The guard
refuses then, unless the user accepts a partial rebuild; the verdict records from which offset
of each partition the new results are complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jobs.kafka.errors import KafkaSetupError

Partition = tuple[str, int]


@dataclass(frozen=True)
class RetentionVerdict:
    complete: bool
    """True: everything the old store consumed is still retained."""
    lost: dict[Partition, tuple[int, int]]
    """(topic, partition) -> (first offset the old store read, earliest retained offset)."""
    complete_from: dict[Partition, int]
    """(topic, partition) -> the offset from which the rebuilt results are complete."""

    def message(self) -> str:
        if self.complete:
            return "every record the old store consumed is still retained"
        parts = ", ".join(
            f"{t}[{p}] offsets {first}..{earliest - 1}"
            for (t, p), (first, earliest) in sorted(self.lost.items())
        )
        return (f"retention already deleted input the new version needs ({parts}); "
                "accept a partial rebuild to go on, results are then complete only from "
                "the earliest retained offsets")


def check_retention(first_consumed: Mapping[Partition, int],
                    earliest: Mapping[Partition, int]) -> RetentionVerdict:
    """Compare the old store's first offsets with the topic's earliest retained offsets.

    A partition the old store never read is complete from its earliest offset; a partition
    that no longer exists is an error (the topic was recreated or shrunk)."""
    lost: dict[Partition, tuple[int, int]] = {}
    for tp, first in first_consumed.items():
        if tp not in earliest:
            raise KafkaSetupError(
                f"partition {tp[0]}[{tp[1]}] the old store read no longer exists", "retention")
        if earliest[tp] > first:
            lost[tp] = (first, earliest[tp])
    return RetentionVerdict(complete=not lost, lost=lost, complete_from=dict(earliest))


def guard(first_consumed: Mapping[Partition, int], earliest: Mapping[Partition, int],
          accept_partial: bool) -> RetentionVerdict:
    """:func:`check_retention`, raising :class:`KafkaSetupError` unless complete or accepted."""
    verdict = check_retention(first_consumed, earliest)
    if not verdict.complete and not accept_partial:
        raise KafkaSetupError(verdict.message(), "retention")
    return verdict
