#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real: chromium (browser tests)
# and the PostgreSQL server binaries (catalog suite). Skips what is already there.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: need ${need[*]} but not root; install them with apt-get" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
