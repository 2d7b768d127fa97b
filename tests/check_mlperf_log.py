#!/usr/bin/env python3
"""check_mlperf_log.py -- mlperf.log of a short real training run, read by the mlperf-logging
package's own parser and compliance checker.

usage: check_mlperf_log.py <daybreak executable> <scratch folder>

Trains the quick recipe on 128 CIFAR-10 images for 2 epochs (CPU, about 10 s), then checks:
  - every line parses with the package's mlp_parser (ruleset 5.1.0), in mllog's key order;
  - the package's compliance checker passes the run with its training 5.1.0 common rules (the
    benchmark-specific rules do not apply: CIFAR-10 is not an MLPerf benchmark);
  - eval_accuracy per epoch equals logs.tsv's top1Accuracy, and run_stop's status matches
    result.json's.
Then the same run stopped by SIGTERM after epoch 1 and continued with --resume (about 10 s
more): its one mlperf.log passes the same checks and holds one run_start/run_stop pair and
each epoch's epoch_start, epoch_stop and eval_accuracy once, epochs 1, 2 in order.
Exit 0 pass, 1 fail, 77 skip (the package or the data missing; with CI=true those fail).
"""
import json
import os
import signal
import subprocess
import sys
import time


def skip(reason):
    if os.environ.get("CI") == "true":
        print(f"error: {reason} (CI=true: a missing dependency is a failure)")
        return 1
    print(f"skipped: {reason}")
    return 77


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, scratch = sys.argv[1], sys.argv[2]
    try:
        from mlperf_logging.compliance_checker import mlp_compliance, mlp_parser
    except ImportError as e:
        return skip(f"the mlperf-logging package is not importable by {sys.executable} ({e}); "
                    "tools/install-deps.sh installs it into build/pyenv")
    data = os.environ.get("DAYBREAK_DATA", "")
    if not os.path.isdir(os.path.join(data, "cifar-10-batches-bin")):
        return skip(f"no CIFAR-10 in DAYBREAK_DATA={data!r}")

    subprocess.run(["rm", "-rf", scratch], check=True)
    os.makedirs(scratch)
    failures = []
    run_dir = os.path.join(scratch, "run")
    p = subprocess.run(train_command(exe, run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout)
        print(f"FAIL: daybreak train exited {p.returncode}")
        return 1
    failures += [f"uninterrupted run: {f}" for f in check_log(run_dir, mlp_parser, mlp_compliance)]

    resumed_dir = os.path.join(scratch, "resumed")
    problem = interrupt_after_epoch_1_and_resume(exe, resumed_dir)
    if problem:
        failures.append(f"resumed run: {problem}")
    else:
        failures += [f"resumed run: {f}" for f in check_log(resumed_dir, mlp_parser, mlp_compliance)]
        failures += [f"resumed run: {f}" for f in check_one_run(resumed_dir, mlp_parser)]

    for f in failures:
        print("FAIL:", f)
    print(f"2 logs checked, {len(failures)} failures")
    return 1 if failures else 0


EPOCHS = 2


def train_command(exe, run_dir):
    return [exe, "train", "--backend", "cpu", "--recipe", "quick", "--batch", "64", "--train-subset", "128",
            "--test-subset", "100", "--epochs", str(EPOCHS), "--target", "0", "--all-epochs", "--seed", "3",
            "--no-progress", "--quiet", "--author", "daybreak tests", "--out", run_dir]


def logged_epochs(run_dir):
    try:
        with open(os.path.join(run_dir, "logs.tsv"), encoding="utf-8") as f:
            return len([l for l in f.read().splitlines() if l and not l.startswith("#")]) - 1
    except OSError:
        return 0


def interrupt_after_epoch_1_and_resume(exe, run_dir):
    """SIGTERM once logs.tsv has epoch 1, then --resume to the end; a problem, or None."""
    run = subprocess.Popen(train_command(exe, run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while logged_epochs(run_dir) < 1 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    run.send_signal(signal.SIGTERM)
    out, _ = run.communicate()
    if run.returncode != 128 + signal.SIGTERM:
        return f"SIGTERM after epoch 1: daybreak exited {run.returncode}, expected 143:\n{out}"
    p = subprocess.run([exe, "train", "--resume", run_dir, "--no-progress", "--quiet"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return f"daybreak train --resume exited {p.returncode}:\n{p.stdout}"
    if "the run was interrupted" not in p.stdout:
        return f"--resume did not say it continued an interrupted run:\n{p.stdout}"
    return None


def check_one_run(run_dir, mlp_parser):
    """A resumed run's log is one run: one run_start and run_stop, every epoch's events once, in order."""
    loglines, _ = mlp_parser.parse_file(os.path.join(run_dir, "mlperf.log"), ruleset="5.1.0")
    failures = []
    keys = [ll.key for ll in loglines]
    for key in ("init_start", "init_stop", "run_start", "run_stop"):
        if keys.count(key) != 1:
            failures.append(f"{keys.count(key)} {key} events, expected 1")
    if "run_start" in keys and "run_stop" in keys and keys.index("run_start") > keys.index("run_stop"):
        failures.append("run_stop before run_start")
    want = list(range(1, EPOCHS + 1))
    for key in ("epoch_start", "epoch_stop", "eval_accuracy"):
        epochs = [ll.value["metadata"]["epoch_num"] for ll in loglines if ll.key == key]
        if epochs != want:
            failures.append(f"{key} for epochs {epochs}, expected {want}")
    return failures


def check_log(run_dir, mlp_parser, mlp_compliance):
    failures = []
    log_path = os.path.join(run_dir, "mlperf.log")
    loglines, errors = mlp_parser.parse_file(log_path, ruleset="5.1.0")
    for line, err in errors:
        failures.append(f"mlp_parser: {err}: {line}")
    with open(log_path, encoding="utf-8") as f:
        raw = [l for l in f.read().splitlines()]
    if not raw or len(raw) != len(loglines):
        failures.append(f"{len(raw)} lines, {len(loglines)} parsed")
    order = ["namespace", "time_ms", "event_type", "key", "value", "metadata"]
    times = []
    for line in raw:
        obj = json.loads(line[len(":::MLLOG "):], object_pairs_hook=lambda kv: kv)
        keys = [k for k, _ in obj]
        if keys != order:
            failures.append(f"keys {keys}, mllog writes {order}: {line}")
        times.append(dict(obj)["time_ms"])
    if times != sorted(times):
        failures.append("time_ms goes backwards")

    checker = mlp_compliance.make_checker("training", "5.1.0", False, True)
    rules = os.path.join(os.path.dirname(mlp_compliance.__file__), "training_5.1.0", "common.yaml")
    checker.configured_checks(loglines, rules)
    if checker.has_messages():
        checker.log_messages()
        failures.append("the compliance checker's common rules failed (messages above)")

    with open(os.path.join(run_dir, "logs.tsv"), encoding="utf-8") as f:
        rows = [l.split("\t") for l in f.read().splitlines() if not l.startswith("#")][1:]
    logged = [(ll.value["metadata"]["epoch_num"], ll.value["value"]) for ll in loglines if ll.key == "eval_accuracy"]
    expected = [(int(r[0]), r[2]) for r in rows]
    got = [(e, f"{100.0 * v:.2f}") for e, v in logged]
    if got != expected:
        failures.append(f"eval_accuracy {got} != logs.tsv {expected}")
    with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
        status = json.load(f)["status"]
    stops = [ll.value["metadata"].get("status") for ll in loglines if ll.key == "run_stop"]
    want = "success" if status == "reached" else "aborted"
    if stops != [want]:
        failures.append(f"run_stop statuses {stops}, result.json status {status} means [{want!r}]")
    for key in ("global_batch_size", "opt_base_learning_rate", "seed", "submission_org"):
        if not any(ll.key == key for ll in loglines):
            failures.append(f"no {key}")
    print(f"{run_dir}/mlperf.log: {len(loglines)} lines checked, {len(failures)} failures")
    return failures

if __name__ == "__main__":
    sys.exit(main())
