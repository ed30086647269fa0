"""late window counts: time-first slots; on PostgreSQL room for in-place updates

Revision ID: 0004
Revises: 0003

``late_window_counts.slot`` (the per-store identity of a window, unique with ``store``) was
``[key, start, end]``; it becomes ``[end, start, key]`` so that the unique index keeps the
windows of one stretch of time together. A micro-batch's late windows cluster in time, not in
key, so with the key first every batch touched one index page per key (measured: 134 of the
171 pages a 500-window batch wrote on SQLite; time first: 10 of 47). Existing rows are
rewritten from their own columns. The rewrite goes through a placeholder (``#<id>``) because
on both backends uniqueness is checked row by row during an UPDATE, and a new slot can equal
another row's old slot (numeric keys: window (100, 200) of key 300 and window (100, 300) of
key 200).

On PostgreSQL the table also gets ``fillfactor = 50``: its rows are updated by every batch
that counts their window again, and free room in the page makes those updates HOT (no new
index entries, less WAL). SQLite has no such setting.
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_START = "COALESCE(CAST(window_start AS TEXT), 'null')"
_END = "COALESCE(CAST(window_end AS TEXT), 'null')"
TIME_FIRST = f"'[' || {_END} || ',' || {_START} || ',' || key_json || ']'"
KEY_FIRST = f"'[' || key_json || ',' || {_START} || ',' || {_END} || ']'"


def _rewrite_slots(expression: str) -> None:
    op.execute("UPDATE late_window_counts SET slot = '#' || CAST(id AS TEXT)")
    op.execute(f"UPDATE late_window_counts SET slot = {expression}")


def upgrade() -> None:
    _rewrite_slots(TIME_FIRST)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE late_window_counts SET (fillfactor = 50)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE late_window_counts RESET (fillfactor)")
    _rewrite_slots(KEY_FIRST)
