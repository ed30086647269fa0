"""Column types that behave the same on SQLite and PostgreSQL.

SQLite has no time-zone-aware timestamp: SQLAlchemy's ``DateTime`` stores a naive string and
returns naive datetimes, while PostgreSQL's ``timestamptz`` returns aware ones. tidemark only
ever handles UTC-aware datetimes, so :class:`UTCDateTime` refuses naive input, stores UTC and
always hands back an aware UTC datetime.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.types import DateTime, TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: tidemark stores UTC-aware datetimes only")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
