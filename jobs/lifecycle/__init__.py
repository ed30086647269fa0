"""Process lifecycle of tidemark jobs: reconcile desired and actual runs, restart with backoff
and a crash-loop limit, stop gracefully, migrate to a new store and roll back.

Called by the Airflow DAGs in ``dags/`` and by the CLI; tested without Airflow. Heavy modules
(the catalog service, Airflow) are imported by the submodules that need them, not here.
"""

from jobs.lifecycle.errors import LifecycleError
from jobs.lifecycle.policy import RestartPolicy

__all__ = ["LifecycleError", "RestartPolicy"]
