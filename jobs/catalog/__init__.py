"""The catalog: SQLAlchemy 2 models and the typed service layer (the only ORM user).

```python
from jobs.catalog import Catalog, CatalogError
cat = Catalog()                      # TIDEMARK_DB_URL or the SQLite file under TIDEMARK_HOME
v1 = cat.create_job(yaml_text, actor="alice")
```
See ``docs/catalog.md`` for the whole API and the decisions behind it.
"""

from jobs.catalog.errors import CatalogError, ErrorCode
from jobs.catalog.records import (
    Action,
    AuditEvent,
    BatchProgress,
    BatchSnapshot,
    Compatibility,
    DeadLetterSample,
    DesiredState,
    JobInfo,
    JobOverview,
    JobStatus,
    LateCount,
    LatePoint,
    LateSample,
    MigrationInfo,
    MigrationState,
    MigrationStep,
    OutboxEvent,
    PaneRecord,
    ProgressPoint,
    Role,
    RunInfo,
    RunStatus,
    SaveResult,
    SnapshotInfo,
    StoredDeadLetter,
    StoredLateSample,
    StoredPane,
    User,
    VersionInfo,
    WindowLateCount,
)
from jobs.catalog.service import ActivationMode, Catalog, DefinitionInput

__all__ = [
    "Action",
    "ActivationMode",
    "AuditEvent",
    "BatchProgress",
    "BatchSnapshot",
    "Catalog",
    "CatalogError",
    "Compatibility",
    "DeadLetterSample",
    "DefinitionInput",
    "DesiredState",
    "ErrorCode",
    "JobInfo",
    "JobOverview",
    "JobStatus",
    "LateCount",
    "LatePoint",
    "LateSample",
    "MigrationInfo",
    "MigrationState",
    "MigrationStep",
    "OutboxEvent",
    "PaneRecord",
    "ProgressPoint",
    "Role",
    "RunInfo",
    "RunStatus",
    "SaveResult",
    "SnapshotInfo",
    "StoredDeadLetter",
    "StoredLateSample",
    "StoredPane",
    "User",
    "VersionInfo",
    "WindowLateCount",
]
