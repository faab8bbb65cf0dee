"""Profile the cases of a measured dataset again with ncu (counters, then the SASS-patched instruction counts in
a run of their own) and write the new metrics per case id: ``OUT_DIR/recollect.json``.

    python validation/recollect.py validation/h100.json OUT_DIR

Default: only the eight exact-count metrics (perfmodel.gpu.ncu.EXACT_COUNT_METRICS); --all: the three runs.
The first H100 measurement collected every metric in one ncu run, where the global store-sector counts came out
slightly off (see perfmodel/gpu/ncu.py); validation/merge.py --ncu RECOLLECT.json puts these in place of the
first run's.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv):
    from perfmodel.gpu import ncu

    data = json.loads(Path(argv[0]).read_text())
    out = Path(argv[1])
    cases = [{"kernel": c["kernel"], "overrides": c["overrides"]} for c in data["cases"]]
    t0 = time.time()
    found, info = ncu.collect_all(cases, workdir="/tmp/perfmodel_recollect") if "--all" in argv else ncu.collect(cases, workdir="/tmp/perfmodel_recollect")
    result = {"info": info, "metrics": {c["id"]: f for c, f in zip(data["cases"], found)},
              "measured_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / (argv[2] if len(argv) > 2 and not argv[2].startswith("--") else "recollect.json")).write_text(json.dumps(result))
    missing = [cid for cid, f in result["metrics"].items() if f is None]
    print(f"{len(found) - len(missing)} cases profiled in {time.time() - t0:.1f}s; missing: {missing}")
    for c, f in zip(data["cases"], found):
        if f:
            old = c.get("ncu") or {}
            moved = {k: (old.get(k), f.get(k)) for k in ("global_load_requests", "global_load_sectors",
                                                         "global_store_requests", "global_store_sectors")
                     if old.get(k) != f.get(k)}
            if moved:
                print(f"  {c['id']}: {moved}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
