#!/usr/bin/env bash
# `make demo-check` for CI: start the demo on an isolated TIDEMARK_HOME and free ports, run the
# scripted tour against it, always stop the demo (trap), print the logs' tails on failure and
# exit non-zero when any step failed or the demo did not come up.
#
#   scripts/demo-ci.sh                     # fresh home under /tmp, removed after a pass
#   DEMO_CI_HOME=/tmp/d DEMO_CI_KEEP=1 scripts/demo-ci.sh
#
# Bounded: DEMO_CI_TIMEOUT (default 1080 s = 18 min) covers start-up and tour; the stop takes
# at most ~2 more minutes (the demo's own clean stop, then SIGKILL of whatever is left).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
TOTAL="${DEMO_CI_TIMEOUT:-1080}"
HOME_DIR="${DEMO_CI_HOME:-$(mktemp -d /tmp/tidemark-demo-ci.XXXXXX)}"
mkdir -p "$HOME_DIR"
HOME_DIR="$(cd "$HOME_DIR" && pwd)"
LOG="$HOME_DIR/demo.log"
STARTED=$(date +%s)
DEMO_PID=""

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
UI_PORT="${DEMO_CI_UI_PORT:-$(free_port)}"
AIRFLOW_PORT="${DEMO_CI_AIRFLOW_PORT:-$(free_port)}"
while [ "$AIRFLOW_PORT" = "$UI_PORT" ]; do AIRFLOW_PORT="$(free_port)"; done

elapsed() { echo $(( $(date +%s) - STARTED )); }

# Processes started for this home, found by their environment (every child of the demo
# inherits TIDEMARK_HOME): a precise net for leftovers, never a match on a program name.
# Only Python and Java programs count (the demo, Airflow, the UI, the jobs and their JVMs):
# this script's own helpers inherit the variable too.
leftovers() {
    local pid exe
    for env in /proc/[0-9]*/environ; do
        pid="${env#/proc/}"; pid="${pid%/environ}"
        exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || continue
        case "${exe##*/}" in python*|java) ;; *) continue ;; esac
        if { tr '\0' '\n' < "$env"; } 2>/dev/null | grep -qx "TIDEMARK_HOME=$HOME_DIR"; then
            echo "$pid"
        fi
    done
}

print_logs() {
    echo "=== demo-ci: logs under $HOME_DIR (tails) ==="
    local f
    for f in "$LOG" "$HOME_DIR"/logs/*.log "$HOME_DIR"/airflow/logs/*.log; do
        [ -f "$f" ] || continue
        echo "--- $f"; tail -n 40 "$f" | cut -c1-400
    done
    for f in $(ls -t "$HOME_DIR"/logs/*/*.log 2>/dev/null | head -n 6); do
        echo "--- $f"; tail -n 40 "$f" | cut -c1-400
    done
    for f in $(find "$HOME_DIR/airflow/logs" -path '*dag_id=*' -name '*.log' -newer "$LOG" 2>/dev/null \
               | xargs -r ls -t 2>/dev/null | head -n 3); do
        echo "--- $f"; tail -n 20 "$f" | cut -c1-400
    done
}

stop_demo() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$DEMO_PID" ] && kill -0 "$DEMO_PID" 2>/dev/null; then
        echo "demo-ci: stopping the demo (pid $DEMO_PID)"
        kill -TERM "$DEMO_PID" 2>/dev/null
        for _ in $(seq 1 120); do kill -0 "$DEMO_PID" 2>/dev/null || break; sleep 1; done
        kill -0 "$DEMO_PID" 2>/dev/null && kill -KILL "$DEMO_PID" 2>/dev/null
    fi
    local left
    left="$(leftovers)"
    if [ -n "$left" ]; then
        echo "demo-ci: killing leftovers of $HOME_DIR: $(echo $left)"
        kill -KILL $left 2>/dev/null
        sleep 1
    fi
    if [ "$rc" -ne 0 ]; then
        print_logs
        echo "demo-ci: FAILED after $(elapsed) s (exit $rc); everything is kept in $HOME_DIR"
    else
        echo "demo-ci: passed in $(elapsed) s"
        if [ -z "${DEMO_CI_KEEP:-}" ] && [ -z "${DEMO_CI_HOME:-}" ]; then rm -rf "$HOME_DIR"; fi
    fi
    exit "$rc"
}
trap stop_demo EXIT
trap 'exit 130' INT TERM

echo "demo-ci: TIDEMARK_HOME=$HOME_DIR, UI port $UI_PORT, Airflow port $AIRFLOW_PORT"
export TIDEMARK_HOME="$HOME_DIR"
unset TIDEMARK_DB_URL TIDEMARK_CHECKPOINT_ROOT TIDEMARK_RESULTS_ROOT AIRFLOW_HOME
"$PY" -m jobs.demo --ui-port "$UI_PORT" --airflow-port "$AIRFLOW_PORT" > "$LOG" 2>&1 &
DEMO_PID=$!

# the demo writes demo.json once the catalog, generator, UI and Airflow are up
START_LIMIT=$(( TOTAL / 3 ))
until [ -f "$HOME_DIR/demo.json" ]; do
    if ! kill -0 "$DEMO_PID" 2>/dev/null; then
        echo "demo-ci: the demo exited while starting"; exit 1
    fi
    if [ "$(elapsed)" -ge "$START_LIMIT" ]; then
        echo "demo-ci: the demo did not start within $START_LIMIT s"; exit 1
    fi
    sleep 2
done
echo "demo-ci: demo up after $(elapsed) s"
sed -n '/tidemark demo is running/,$p' "$LOG"

BUDGET=$(( TOTAL - $(elapsed) - 20 ))
timeout --kill-after=10 $(( BUDGET + 15 )) \
    "$PY" -m jobs.demo --check --check-budget "$BUDGET"
