#!/usr/bin/env python3
"""det's tpe searcher beside Optuna's TPESampler: mean best value of 50 trials over 10 seeds.

Usage: bench/tpe_vs_optuna.py [--seeds N] [--trials T] [--optuna-only]
  (DET_BIN_DIR: where bench_tpe is, default ../build/bin beside this script; --optuna-only runs
  Optuna alone, without the C++ binary)

The benchmark is bench/tpe_benchmark.hpp's (the tpe unit test's and bench/tpe_bench.cpp's): Branin over
x in [-5, 10] and y in [0, 15] (minimum 0.397887, taken at three points), plus a bowl with its
floor at 0 in each other hyperparameter: (log10(lr) + 3)^2 for lr log-uniform in [1e-5, 1],
((width - 80) / 32)^2 for the integer width in [1, 128], and 0 / 0.25 / 0.5 / 1 for activation
relu / gelu / tanh / sigmoid. Trials run one at a time on both sides, and each side's value for a
seed is the best of its trials. det's tpe and random searches come from build/bin/bench_tpe
(experiment_seed = 1..N); Optuna's from TPESampler(seed=1..N), Optuna 3.1 as Debian packages it
(python3-optuna), which imports only under /usr/bin/python3: where this interpreter cannot import
optuna, the Optuna part runs in a /usr/bin/python3 child of this script.

Settings: both sides use Optuna's TPESampler defaults, which det's tpe copies: n_startup_trials =
10 random trials (counted by results), n_ei_candidates = 24, univariate, prior weight 1, magic
clip on, consider_endpoints off, default_weights. gamma: det's searcher.gamma = 0.1 means the good
observations are the best min(ceil(0.1 * n), 25) of n (searcher/parzen_estimator.cpp,
tpe_good_count), which is exactly Optuna 3.1's default_gamma, min(ceil(0.1 * n), 25); so Optuna
keeps its default gamma function.

The search spaces are the same; bridged:
  - det's `log` (minval -5, maxval 0, base 10) is an exponent range: Optuna's
    suggest_float(1e-5, 1, log=True). det models log10(lr), Optuna ln(lr): the same space scaled
    by ln 10, and the Parzen densities (kernel gaps, the magic clip and the prior all relative to
    the range) scale with it.
  - det's `int` [1, 128] is suggest_int(1, 128): both model it as a discrete range of step 1, the
    kernels truncated to [0.5, 128.5].
  - det's `categorical` is suggest_categorical over the same values, in the same order.
  - det's nested optimizer.lr is Optuna's flat "optimizer.lr"; the constants (batch_size,
    optimizer.kind) are not searched, so Optuna is not asked for them.
Not bridged, and expected to differ only by chance: the random numbers (det's mt19937_64 draws,
its rejection sampling of kernels, its own startup samples vs Optuna's numpy RandomState and
inverse-CDF sampling), so per-seed values are not comparable, only the means over seeds.

Prints: "mean best of T trials over N seeds (minimum 0.397887): det tpe X, optuna tpe Y, det
random Z" and the wall seconds of each.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

SYSTEM_PYTHON = "/usr/bin/python3"
ACTIVATION = {"relu": 0.0, "gelu": 0.25, "tanh": 0.5, "sigmoid": 1.0}


def benchmark(hp):
    """bench/tpe_bench.cpp's benchmark of the same hyperparameters."""
    x, y = hp["x"], hp["y"]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    branin = (y - b * x * x + c * x - 6) ** 2 + 10 * (1 - t) * math.cos(x) + 10
    lr = math.log10(hp["optimizer"]["lr"]) + 3
    width = (hp["width"] - 80) / 32
    return branin + lr * lr + width * width + ACTIVATION[hp["activation"]]


def run_optuna(seeds, trials):
    """Mean best of Optuna's TPE over seeds 1..seeds, and the wall seconds of all the searches."""
    import optuna
    from optuna.samplers._tpe.sampler import default_gamma

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        # In det's order of dimensions (name order, depth first); the order does not change the
        # univariate model.
        hp = {
            "activation": trial.suggest_categorical("activation", list(ACTIVATION)),
            "batch_size": 32,
            "optimizer": {"kind": "sgd", "lr": trial.suggest_float("optimizer.lr", 1e-5, 1.0, log=True)},
            "width": trial.suggest_int("width", 1, 128),
            "x": trial.suggest_float("x", -5.0, 10.0),
            "y": trial.suggest_float("y", 0.0, 15.0),
        }
        return benchmark(hp)

    start = time.perf_counter()
    per_seed = []
    for seed in range(1, seeds + 1):
        sampler = optuna.samplers.TPESampler(
            n_startup_trials=10, n_ei_candidates=24, gamma=default_gamma, seed=seed)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        study.optimize(objective, n_trials=trials, n_jobs=1)
        per_seed.append(study.best_value)
    return {"optuna_tpe_mean_best": sum(per_seed) / seeds, "optuna_tpe_s": time.perf_counter() - start,
            "optuna_version": optuna.__version__, "per_seed": per_seed}


def optuna_result(seeds, trials):
    """run_optuna here if this interpreter has optuna, else in a /usr/bin/python3 child."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        if os.path.realpath(sys.executable) == os.path.realpath(SYSTEM_PYTHON):
            sys.exit("optuna does not import under %s: apt-get install python3-optuna" % SYSTEM_PYTHON)
        child = subprocess.run(
            [SYSTEM_PYTHON, os.path.abspath(__file__), "--optuna-child", "--seeds", str(seeds), "--trials", str(trials)],
            check=True, stdout=subprocess.PIPE, text=True)
        return json.loads(child.stdout.strip().splitlines()[-1])
    return run_optuna(seeds, trials)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--optuna-only", action="store_true", help="run Optuna alone, without bench_tpe")
    parser.add_argument("--optuna-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.optuna_child:
        print(json.dumps(run_optuna(args.seeds, args.trials)))
        return

    head = "mean best of %d trials over %d seeds (minimum 0.397887)" % (args.trials, args.seeds)
    if not args.optuna_only:
        here = os.path.dirname(os.path.abspath(__file__))
        binary = os.path.join(os.environ.get("DET_BIN_DIR", os.path.join(here, "..", "build", "bin")), "bench_tpe")
        if not os.access(binary, os.X_OK):
            sys.exit("no %s: build the bench_tpe target, or set DET_BIN_DIR" % binary)
        start = time.perf_counter()
        det = json.loads(subprocess.run([binary, "--seeds", str(args.seeds), "--trials", str(args.trials)],
                                        check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1])
        det_wall = time.perf_counter() - start

    optuna = optuna_result(args.seeds, args.trials)

    if args.optuna_only:
        print("%s: optuna tpe %.6f" % (head, optuna["optuna_tpe_mean_best"]))
        print("wall seconds: optuna tpe %.3f (Optuna %s)" % (optuna["optuna_tpe_s"], optuna["optuna_version"]))
        return
    print("%s: det tpe %.6f, optuna tpe %.6f, det random %.6f"
          % (head, det["det_tpe_mean_best"], optuna["optuna_tpe_mean_best"], det["det_random_mean_best"]))
    print("wall seconds: det tpe %.3f, optuna tpe %.3f, det random %.3f (bench_tpe process %.3f; Optuna %s)"
          % (det["det_tpe_s"], optuna["optuna_tpe_s"], det["det_random_s"], det_wall, optuna["optuna_version"]))


if __name__ == "__main__":
    main()
