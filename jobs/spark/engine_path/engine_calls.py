"""The engine calls of one processor call and their output, columnar where the engine has it.

The triggered engine returns its panes as columns (``ingest_columns``,
``advance_watermark_columns``: :class:`~jobs.engine.vectorized.emission_columns.EmissionColumns`);
building a ``Pane`` per row only to turn it back into columns was the engine path's largest
output cost, so its rows are built from the arrays (``output.pane_frame``). Other engines keep
the object route (``output.emission_frame``). Either way the rows are the same: the columns'
``to_emissions()`` is exactly what the object API returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from jobs.engine.protocol import WindowingEngine
from jobs.engine.records import Emission, Pane, RecordBatch
from jobs.spark.engine_path.output import emission_frame, pane_frame

if TYPE_CHECKING:
    import pandas as pd

    from jobs.engine.vectorized.columns import ColumnarOutput
    from jobs.engine.vectorized.emission_columns import PaneColumns

Output = Union[list[Emission], "ColumnarOutput"]
"""What one engine call returned: objects, or the triggered engine's columnar output."""
Segment = Union[list[Pane], "PaneColumns"]


def _columnar(eng: WindowingEngine) -> bool:
    from jobs.engine.vectorized.triggered import TriggeredEngine

    return type(eng) is TriggeredEngine and eng.general is None


def ingest(eng: WindowingEngine, batch: RecordBatch) -> Output:
    """``eng.ingest(batch)``, as columns where the engine has them."""
    if _columnar(eng):
        return eng.ingest_columns(batch)  # type: ignore[attr-defined]
    return eng.ingest(batch)


def advance_watermark(eng: WindowingEngine, wm: int) -> Output:
    """``eng.advance_watermark(wm)``, as columns where the engine has them."""
    if _columnar(eng):
        return eng.advance_watermark_columns(wm)  # type: ignore[attr-defined]
    return eng.advance_watermark(wm)


def split_output(parts: list[Output]) -> tuple[list[Segment], list[Emission]]:
    """The calls' panes, in emission order, as segments (object lists or pane columns), and
    everything else they emitted (late records, dead letters), in emission order."""
    from jobs.engine.vectorized.columns import ColumnarOutput
    from jobs.engine.vectorized.emission_columns import EmissionColumns

    segments: list[Segment] = []
    side: list[Emission] = []

    def objects(out: list[Any]) -> None:
        panes = [e for e in out if type(e) is Pane]
        if len(panes) != len(out):
            side.extend(e for e in out if type(e) is not Pane)
        if panes:
            segments.append(panes)

    for part in parts:
        if isinstance(part, ColumnarOutput):
            if isinstance(part.panes, EmissionColumns):
                objects(part.before)
                cols = part.panes
                if len(cols.late):
                    side.extend(cols.late.to_late_records())
                if len(cols.panes):
                    segments.append(cols.panes)
            else:
                objects(part.to_emissions())
        else:
            objects(part)
    return segments, side


def output_frame(segments: list[Segment]) -> pd.DataFrame | None:
    """The output rows of the panes (``None`` when there are none): straight from the
    columns when every segment is columnar, else from ``Pane`` objects."""
    if all(not isinstance(s, list) for s in segments):
        return pane_frame(segments)  # type: ignore[arg-type]
    panes: list[Pane] = []
    for s in segments:
        panes.extend(s if isinstance(s, list) else s.to_panes())
    return emission_frame(panes, [])
