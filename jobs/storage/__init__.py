"""tidemark's own file I/O around a job, over local paths and Hadoop filesystem URIs.

Every file tidemark reads or writes beside Spark (markers in a checkpoint, Spark's offsets and
commits logs it reads, the gate's side files) goes through :func:`storage_for`, so a
checkpoint or results root may be ``hdfs://``, ``s3a://`` or ``file:`` as well as a local path.
:mod:`jobs.storage.manifest` owns every tidemark file kept in a checkpoint.
"""

from jobs.storage.base import Storage
from jobs.storage.errors import StorageError
from jobs.storage.location import is_local, join, local_path, scheme, validate
from jobs.storage.resolve import WEBHDFS_ENV, WEBHDFS_PROPERTY, check_location, storage_for

__all__ = [
    "WEBHDFS_ENV",
    "WEBHDFS_PROPERTY",
    "Storage",
    "StorageError",
    "check_location",
    "is_local",
    "join",
    "local_path",
    "scheme",
    "storage_for",
    "validate",
]
