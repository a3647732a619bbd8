#!/usr/bin/env python3
# run.sh: weight 40, asan skip
# (the model on sqlite runs the bridge under the sanitizers, the store's unit tests on PostgreSQL the store's code)
"""lifecycle_pg.py - the model-based lifecycle test (lifecycle.py) with the store on PostgreSQL:
MODEL_ENGINE=postgres and MODEL_PG_SEEDS seeds (default 20: seeds 1..20, the first of the
sqlite run's 200, so that a seed failing on one engine only points at the engine).  Each
world's database is fresh on the cluster AB_TEST_PG_URI names (tests/run.sh starts one), or on
a private cluster when it is unset.  Without a PostgreSQL server installed it says so and counts
nothing.  Every other knob of lifecycle.py applies (MODEL_SEED, MODEL_STEPS, MODEL_JOBS, ...);
a failing seed's replay line names the engine.  The last line is "N passed, N failed".
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import pg  # noqa: E402

if __name__ == "__main__":
    if not os.environ.get("AB_TEST_PG_URI") and not pg.installed():
        print("lifecycle_pg: skipped: no PostgreSQL server installed (Debian's postgresql)")
        print("0 passed, 0 failed")
        sys.exit(0)
    os.environ["MODEL_ENGINE"] = "postgres"
    os.environ["MODEL_SEEDS"] = os.environ.get("MODEL_PG_SEEDS") or "20"
    sys.path.insert(0, HERE)
    import lifecycle  # noqa: E402 - reads MODEL_ENGINE when imported
    sys.exit(lifecycle.main())
