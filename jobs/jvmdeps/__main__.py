"""``python -m jobs.jvmdeps fetch [NAME ...]`` | ``lock NAME`` | ``path NAME``."""

from __future__ import annotations

import sys

from jobs.jvmdeps.bundles import JvmDepsError, bundle_dir, bundle_names, fetch


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"fetch", "lock", "path"}:
        print("usage: python -m jobs.jvmdeps fetch [NAME ...] | lock NAME | path NAME", file=sys.stderr)
        return 2
    verb, names = argv[0], argv[1:] or bundle_names()
    try:
        for name in names:
            if verb == "path":
                print(bundle_dir(name))
            else:
                print(fetch(name, update_lock=verb == "lock"))
    except JvmDepsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
