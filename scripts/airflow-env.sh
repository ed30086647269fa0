#!/usr/bin/env bash
# The environment of tidemark's local Airflow, for a shell: `source scripts/airflow-env.sh`,
# then e.g. `airflow dags list` or `airflow dags trigger tidemark_migration -c '{"resume": true}'`.
# The values come from jobs.lifecycle.airflow_local (one definition, no drift): isolated
# AIRFLOW_HOME under TIDEMARK_HOME, SQLite metadata DB, LocalExecutor, api-server on 127.0.0.1
# (TIDEMARK_AIRFLOW_PORT, default 8080), the repo's dags/ folder.
_tidemark_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_tidemark_py="${_tidemark_root}/.venv/bin/python"
eval "$(cd "${_tidemark_root}" && "${_tidemark_py}" -m jobs.lifecycle.airflow_local --print-env)"
unset _tidemark_root _tidemark_py
