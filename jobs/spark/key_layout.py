"""How the native path's state store holds the key: as its JSON text or as the raw value.

Why it matters: grouping by the key's JSON text (``to_json(array(k))`` stripped of brackets)
made Spark run ``to_json`` twice for every record (gate check and projection) and keep the
text in the shuffle and the state store; with the raw value it runs once per pane
(docs/performance.md has the profile; the wall-time effect is inside the run-to-run noise).

Grouping by the raw value is only correct where two raw values are equal exactly when their
JSON texts are: plain (binary-collation) strings, integral numbers and booleans. Floats are not
(``-0.0 == 0.0`` in Spark's grouping, but their texts differ; NaN), nor dates and decimals (kept
out: their Python values in ``tidemark state`` would need their own conversion).

The state schema of a checkpoint cannot change, so the choice is fixed when a checkpoint is
created and kept in ``tidemark_native_key.json`` (the checkpoint manifest,
``jobs/storage/manifest.py``, which also holds the rule for checkpoints from before that file:
they keep the JSON text).
"""

from __future__ import annotations

from jobs.storage.manifest import KEY_FILE as LAYOUT_FILE
from jobs.storage.manifest import KeyLayout, choose_key_layout, read_key_layout

__all__ = ["LAYOUT_FILE", "KeyLayout", "choose_key_layout", "read_key_layout"]
