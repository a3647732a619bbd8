"""model_suite.py - the seed runner the model-based tests share (lifecycle.py, lifecycle_pg.py,
janitor_model.py, campaign.py): MODEL_* read from the environment, one world per seed run in a
pool of processes, a failing seed's report with its replay line, and the closing line
"N passed, N failed" tests/run.sh reads.

A Suite names what a run is made of; its world class W is built as W(seed, features, steps,
keep) and has run() (raises on failure; ModelFailure for a broken promise), figures(),
close(), step_no, log_lines, tail(n), log_path, uri (its PostgreSQL database or None) and
keep.  The knobs (MODEL_SEEDS, MODEL_SEED, ...) are described in lifecycle.py's header.
"""

import multiprocessing
import os
import re
import time
import traceback

import pg  # tests/integration: the model's script put it on sys.path
from world_process import BIN

ENGINE = os.environ.get("MODEL_ENGINE") or "sqlite"
PG = None                # the pg.Cluster of MODEL_ENGINE=postgres (main() starts it)


class ModelFailure(Exception):
    """A world saw the binary break a promise (not a crash of the test itself)."""


def parse_features(spec, known):
    """MODEL_FEATURES read against the feature classes known ("all", "x,y" or "-x,-y")."""
    spec = (spec or "all").strip()
    if spec in ("", "all"):
        return set(known)
    items = [x.strip() for x in spec.split(",") if x.strip()]
    if all(x.startswith("-") for x in items):
        out = set(known) - {x[1:] for x in items}
    else:
        out = set(items)
    bad = [x.lstrip("-") for x in items if x.lstrip("-") not in known]
    if bad:
        raise SystemExit("unknown MODEL_FEATURES %s (known: %s)" % (bad, ",".join(known)))
    return out


def feature_spec(features, known):
    """The shortest MODEL_FEATURES that names features."""
    if set(features) == set(known):
        return "all"
    if len(features) > len(known) / 2:
        return ",".join("-" + f for f in known if f not in features)
    return ",".join(f for f in known if f in features)


def walk_steps(world, check_odds):
    """The steps of a world: world.step() for world.step_no = 1 .. world.n_steps, each followed
    by world.check() with probability check_odds (world.rng); step_no is one past the last
    step after, so that a failure of the closing checks says so."""
    for world.step_no in range(1, world.n_steps + 1):
        world.step()
        if world.rng.random() < check_odds:
            world.check()
    world.step_no += 1


class Suite:
    """What a run is made of: the world class, the feature classes it knows, the script a
    replay line runs, the defaults of MODEL_STEPS, MODEL_SEEDS, MODEL_JOBS and MODEL_FEATURES,
    summarize(figures) (optional) that prints what the passing worlds measured (a list of
    their World.figures()), and env: the other variables a replay line repeats when set.
    lifecycle.py's is LIFECYCLE; janitor_model.py and campaign.py have their own."""

    def __init__(self, world, known, script, steps=60, seeds=200, jobs=4, features="all",
                 summarize=None, env=()):
        self.world, self.known, self.script = world, known, script
        self.steps, self.seeds, self.jobs, self.features = steps, seeds, jobs, features
        self.summarize, self.env = summarize, env



def replay_line(seed, features, steps, suite):
    """The command line that runs seed again as it ran (features, steps, suite.env)."""
    extra = "" if steps == suite.steps else " MODEL_STEPS=%d" % steps
    extra += "".join(" %s=%s" % (v, os.environ[v]) for v in suite.env if os.environ.get(v))
    engine = "" if ENGINE == "sqlite" else "MODEL_ENGINE=%s " % ENGINE
    return ("make NODEPS=1 alertbridge && %sMODEL_SEED=%d MODEL_FEATURES=%s%s MODEL_KEEP=1 "
            "python3 %s" % (engine, seed, feature_spec(features, suite.known), extra,
                            suite.script))


def run_seed(args):
    seed, features, steps, keep, suite = args
    t0 = time.time()
    w = suite.world(seed, features, steps, keep)
    out = []
    ok = True
    figures = {}
    try:
        w.run()
        figures = w.figures()
    except Exception as e:  # noqa: BLE001 - every failure is reported with its seed
        ok = False
        out.append("seed %d (%s) FAILED at step %d: %s" % (seed, ENGINE, w.step_no, e))
        if not isinstance(e, ModelFailure):
            out.append(traceback.format_exc())
        out.append("  steps:")
        out += ["    " + x for x in w.log_lines[-40:]]
        keys = set(re.findall(r"\b[0-9a-f]{16}\b", str(e)))
        lines = [x for x in w.tail(100000).splitlines()
                 if any(k in x for k in keys) and "webhook request" not in x]
        if lines:
            out.append("  alertbridge log, lines of %s (last 30):" % " ".join(sorted(keys)))
            out += ["    " + x for x in lines[-30:]]
        if w.uri:
            out.append("  database: %s" % w.uri)
        out.append("  alertbridge log (last 15 lines, %s):" % w.log_path)
        out += ["    " + x for x in w.tail(15).splitlines()]
        w.keep = True
        out.append("  replay: " + replay_line(seed, features, steps, suite))
    finally:
        w.close()
    return seed, ok, time.time() - t0, "\n".join(out), figures


def main(suite):
    """Run the seeds of suite the environment asks for; the exit code."""
    global PG
    env = os.environ
    if ENGINE not in ("sqlite", "postgres"):
        raise SystemExit("unknown MODEL_ENGINE %s (known: sqlite, postgres)" % ENGINE)
    features = parse_features(env.get("MODEL_FEATURES") or suite.features, suite.known)
    steps = max(1, int(env.get("MODEL_STEPS") or suite.steps))
    jobs = max(1, int(env.get("MODEL_JOBS") or suite.jobs))
    keep = bool(env.get("MODEL_KEEP"))
    if env.get("MODEL_SEED"):
        seeds = [int(env["MODEL_SEED"])] * max(1, int(env.get("MODEL_REPEAT") or 1))
    else:
        first = int(env.get("MODEL_FIRST") or 1)
        seeds = list(range(first, first + int(env.get("MODEL_SEEDS") or suite.seeds)))
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        print("alertbridge binary not found: %s (set ALERTBRIDGE_BIN)" % BIN)
        print("0 passed, 1 failed")
        return 1
    if ENGINE == "postgres":
        try:
            PG = pg.Cluster().start()
        except Exception as e:  # noqa: BLE001 - no server, or it would not start
            print("model: no PostgreSQL: %s" % e)
            print("0 passed, 1 failed")
            return 1
    try:
        return run_seeds(seeds, features, steps, jobs, keep, suite)
    finally:
        if PG:
            PG.stop()


def run_seeds(seeds, features, steps, jobs, keep, suite):
    print("model: %d seed(s) from %d, %d steps each, features %s, %d at once, on %s%s" % (
        len(seeds), seeds[0], steps, feature_spec(features, suite.known), jobs, ENGINE,
        " (%s)" % PG.uri if PG else ""), flush=True)
    t0 = time.time()
    passed = failed = 0
    failing = []
    work = [(s, features, steps, keep, suite) for s in seeds]
    figures = []
    if jobs == 1 or len(seeds) == 1:
        results = map(run_seed, work)
        pool = None
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap_unordered(run_seed, work)
    for seed, ok, secs, text, fig in results:
        if ok:
            passed += 1
            figures.append(fig)
            print("seed %d: ok (%.1f s)" % (seed, secs), flush=True)
        else:
            failed += 1
            failing.append(seed)
            print(text, flush=True)
    if pool:
        pool.close()
        pool.join()
    if suite.summarize and figures:
        suite.summarize(figures)
    print("model: %d seeds on %s in %.0f s%s" % (
        len(seeds), ENGINE, time.time() - t0,
        "; failing seeds: %s" % " ".join(map(str, sorted(failing))) if failing else ""))
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 and passed > 0 else 1
