"""How the native path's state store holds the key: as its JSON text or as the raw value.

Why it matters: grouping by the key's JSON text (``to_json(array(k))`` stripped of brackets)
made Spark run ``to_json`` twice for every record (gate check and projection) and keep the
text in the shuffle and the state store; with the raw value it runs once per pane
(docs/performance.md has the profile; the wall-time effect is inside the run-to-run noise).

Grouping by the raw value is only correct where two raw values are equal exactly when their
JSON texts are: plain (binary-collation) strings, integral numbers and booleans. Floats are not
(``-0.0 == 0.0`` in Spark's grouping, but their texts differ; NaN), nor dates and decimals (kept
out: their Python values in ``tidemark state`` would need their own conversion). The pane's
``key`` column is the same JSON text either way, computed once per pane from the raw value.

The state schema of a checkpoint cannot change, so the choice is fixed when a checkpoint is
created and written to ``tidemark_native_key.json`` in its root; a checkpoint that already ran
before this file existed keeps the JSON text, and so does a checkpoint that is not a local path
(no file can be written beside it here).
"""

from __future__ import annotations

import json
from typing import Literal

from jobs.spark.checkpoint import has_run, local_root, write_marker

KeyLayout = Literal["raw", "json"]
LAYOUT_FILE = "tidemark_native_key.json"


def read_key_layout(checkpoint: str) -> KeyLayout:
    """The layout a checkpoint's state was written with (``json`` when no file says otherwise)."""
    root = local_root(checkpoint)
    if root is None or not (root / LAYOUT_FILE).exists():
        return "json"
    value = json.loads((root / LAYOUT_FILE).read_text(encoding="utf-8")).get("key")
    return "raw" if value == "raw" else "json"


def choose_key_layout(checkpoint: str, raw_possible: bool) -> KeyLayout:
    """The layout to run with: the checkpoint's own if it has one; ``json`` for a checkpoint
    that already ran without the file or is not local; else ``raw`` when the key type allows it.
    A new choice is written to the checkpoint before the query starts."""
    root = local_root(checkpoint)
    if root is None:
        return "json"
    if (root / LAYOUT_FILE).exists():
        return read_key_layout(checkpoint)
    # state written before layout files existed holds the JSON text
    layout: KeyLayout = "raw" if raw_possible and not has_run(root) else "json"
    write_marker(root, LAYOUT_FILE, {"key": layout})
    return layout
