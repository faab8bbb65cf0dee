"""Launch each case's kernel exactly once (run under ``ncu`` by :func:`perfmodel.gpu.ncu.collect`).

Usage: ``python -m perfmodel.gpu.ncu_driver CASES.json MANIFEST.json [--device-index N]``. The manifest lists,
in launch order, whether each case launched (a case that fails to compile or launch is skipped, not fatal).
"""
from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    cases_path, manifest_path = argv[0], argv[1]
    device_index = int(argv[argv.index("--device-index") + 1]) if "--device-index" in argv else 0
    from perfmodel.gpu.runner import run_kernel

    cases = json.loads(open(cases_path).read())
    manifest = []
    for case in cases:
        entry = {"kernel": case["kernel"], "overrides": case.get("overrides", {})}
        try:
            run = run_kernel(case["kernel"], case.get("overrides"), device_index=device_index, time_it=False,
                             check=False, launches=1)
            entry.update(launched=True, grid=list(run.grid), block=list(run.block))
        except Exception as err:  # noqa: BLE001 - record and go on with the other cases
            entry.update(launched=False, error=f"{type(err).__name__}: {err}")
        manifest.append(entry)
        with open(manifest_path, "w") as fh:  # rewritten each time: survives a crash mid-way
            json.dump(manifest, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
