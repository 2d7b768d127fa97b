#!/usr/bin/env python3
"""gpu_summary.py — summary.md of a tools/gpu-check.sh call: one row per stage, then the
headline figures from what the stages left in the work folder. Standard library only (it runs
on the GPU machine's Python and in CI); gpu-check.sh calls it after every stage.

    python3 tools/gpu_summary.py --work DIR --stages FILE [--deadline S] [--elapsed S] [--smoke 0|1]

Reads, where present: FILE (the call's stage rows: name, status, exit code, seconds, note),
DIR/env.txt, DIR/devices.txt, DIR/check.json, DIR/bench.tsv, DIR/torch.tsv, DIR/logs/profile-*.txt,
DIR/runs/*/result.json and DIR/runs/torch-airbench94-*.json. Missing pieces are said, never invented.
"""
import argparse
import csv
import glob
import json
import os
import sys

# daybreak's recipe -> the PyTorch model of tools/bench_pytorch.py
RECIPE_MODEL = {"airbench94": "airbench94", "cifar10-resnet9": "resnet9"}


def read_tsv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f, delimiter="\t"))
    except OSError:
        return []


def number(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v):
    n = number(v)
    return f"{n:.2f}" if n is not None else "?"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def stage_table(path):
    lines = ["| stage | status | exit | seconds | note |", "| --- | --- | --- | --- | --- |"]
    try:
        with open(path) as f:
            for row in f:
                parts = (row.rstrip("\n").split("\t") + [""] * 5)[:5]
                lines.append("| " + " | ".join(cell(p) for p in parts) + " |")
    except OSError:
        lines.append("| (no stage ran) | | | | |")
    return lines


def read_lines(work, name):
    """The lines of a file of the work folder, or None when it is not there."""
    try:
        with open(os.path.join(work, name)) as f:
            return f.read().splitlines()
    except OSError:
        return None


def environment(work):
    out = []
    env = read_lines(work, "env.txt")
    if env is None:
        return ["- environment: not read (the env stage did not run)"]
    for key in ("os:", "glibc:", "runtime:", "torch:", "cpus:"):
        out += [f"- {line}" for line in env if line.startswith(key)]
    gpu = [line for i, line in enumerate(env) if i > 0 and env[i - 1].startswith("name, driver_version")]
    if gpu:
        out.append(f"- GPU (nvidia-smi): {gpu[0]}")
    return out


def devices(work):
    out = []
    lines = read_lines(work, "devices.txt")
    if lines is None:
        return ["- devices: not listed (the drivers stage did not run)"]
    for i, line in enumerate(lines):
        s = line.strip()
        if (s.startswith("opencl:") or s.startswith("vulkan:")) and "  " in s and i + 2 < len(lines):
            out.append(f"- `{s.split()[0]}` {' '.join(s.split()[1:])}; {lines[i + 2].strip()}")
        elif s.startswith(("opencl:", "vulkan:")) and "device" in s:
            out.append(f"- {s}")
    return out


def checks(work):
    try:
        with open(os.path.join(work, "check.json")) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return ["- check: no result"]
    out = []
    for api, r in doc.items():
        res = r.get("result") if isinstance(r, dict) else None
        if not res:
            out.append(f"- {api} ({r.get('device', '?')}): no JSON (exit {r.get('exit', '?')}; see log.txt)")
            continue
        for d in res.get("devices", []):
            if "error" in d:
                out.append(f"- {d.get('device')}: cannot be opened: {d['error']}")
                continue
            ops = [c for c in d.get("checks", []) if c.get("check") == "op"]
            failed = [c["name"] for c in ops if c.get("status") == "fail"]
            passed = sum(1 for c in ops if c.get("status") == "pass")
            curve = [c for c in d.get("checks", []) if c.get("check") == "curve"]
            cs = curve[0].get("status", "?") if curve else "?"
            out.append(f"- {d.get('device')} {d.get('name', '')}: {'PASS' if d.get('pass') else 'FAIL'}; "
                       f"{passed} ops passed, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}; "
                       f"curve {cs}" + (f" (only {', '.join(res['selected_ops'])})" if res.get("selected_ops") else ""))
    return out or ["- check: no device in the result"]


def throughput(work):
    bench = read_tsv(os.path.join(work, "bench.tsv"))
    torch = read_tsv(os.path.join(work, "torch.tsv"))
    out = []
    if bench:
        out += ["| daybreak | device | recipe | precision | batch | img/s | ms/step | build s |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in bench:
            head = f"| {r['backend']}:{r['index']} | {cell(r['device'])} | {r['recipe']} | {r['precision']} | {r['batch']} | "
            if r.get("error"):
                out.append(head + f"error: {cell(r['error'])} | | |")
            else:
                out.append(head + f"{r['img_per_s']} | {r['ms_per_step']} | {r['build_s']} |")
    else:
        out.append("- bench_train: no figures")
    if torch:
        out += ["", "| PyTorch | device | variant | batch | img/s | ms/step | warm-up s | note |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in torch:
            out.append(f"| {r['model']} | {r['device']} | {r['variant']} | {r['batch']} | {r['img_per_s']} | "
                       f"{r['ms_per_step']} | {r['warmup_s']} | {cell(r.get('note', ''))} |")
    ratios = []
    for recipe, model in RECIPE_MODEL.items():   # like for like: the same network at the same batch
        ours = [(number(r["img_per_s"]), f"{r['backend']}:{r['index']}", r["batch"]) for r in bench
                if r.get("recipe") == recipe and r.get("precision") == "fp32" and number(r.get("img_per_s"))]
        if not ours:
            continue
        best, api, batch = max(ours)
        ref = [number(r["img_per_s"]) for r in torch if r.get("model") == model and r.get("variant") == "fp32"
               and r.get("batch") == batch and number(r.get("img_per_s"))]
        if ref:
            ratios.append(f"- {recipe} at batch {batch}: daybreak {best:.1f} img/s ({api}) / PyTorch eager fp32 "
                          f"{ref[0]:.1f} img/s = **{best / ref[0]:.2f}x** (the bar: 0.5x)")
    return out + ([""] + ratios if ratios else [])


def time_to_accuracy(work):
    out = []
    for path in sorted(glob.glob(os.path.join(work, "runs", "*", "result.json"))):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            out.append(f"- {os.path.basename(os.path.dirname(path))}: unreadable result.json")
            continue
        dev = r.get("device", {})
        eps = r.get("epochs") or [{}]
        last = eps[-1]
        builds = r.get("builds", {}).get("total_seconds")
        subset = " (subset)" if r.get("subset") else ""
        reached = f"reached in {number(r.get('seconds_to_target')) or 0:.2f} s" if r.get("target_reached") else "not reached"
        en = r.get("energy") or {}
        energy = (f", energy {fmt(en.get('joules_on_clock'))} J on the clock ({en.get('source')})" if en.get("measured")
                  else f", energy not measured: {en.get('reason', '?')}" if en else "")
        out.append(f"- daybreak {r.get('recipe', {}).get('name', r.get('model', '?'))} on {dev.get('backend')}:"
                   f"{dev.get('index')} {dev.get('name', '')}{subset}: status {r.get('status')}, "
                   f"{len(eps)} epochs, final accuracy {fmt(last.get('test_accuracy'))}%, clock "
                   f"{fmt(last.get('clock_seconds'))} s, target {r.get('target')}% {reached}"
                   + (f", builds {builds:.1f} s off the clock" if isinstance(builds, (int, float)) else "") + energy)
    for path in sorted(glob.glob(os.path.join(work, "runs", "torch-airbench94-*.json"))):
        try:
            with open(path) as f:
                t = json.load(f)
        except (OSError, ValueError):
            continue
        for run in t.get("runs", []):
            out.append(f"- PyTorch airbench94 port on {t.get('device_name')} ({t.get('dtype')}, torch {t.get('torch')}, "
                       f"{t.get('train_images')} training images): TTA accuracy {run['tta_accuracy']:.2f}%, clock "
                       f"{run['clock_seconds']:.2f} s, warm-up {t.get('warmup_seconds', 0):.1f} s off the clock")
    return out or ["- no time-to-accuracy run"]


def profiles(work, top=6):
    """Per API, from logs/profile-API.txt (`daybreak train --profile`): the step's total, what is
    outside the ops, the per-step costs, and the ops that took the most."""
    out = []
    logs = os.path.join(work, "logs")
    names = sorted(n for n in os.listdir(logs) if n.startswith("profile-")) if os.path.isdir(logs) else []
    for name in names:
        lines = read_lines(work, os.path.join("logs", name)) or []
        head = next((line for line in lines if line.startswith("profile:")), None)
        if head is None:
            out.append(f"- {name}: no profile (see log.txt)")
            continue
        rows, total, inside = [], None, False
        for line in lines:
            f = line.split()
            if line.startswith("op ") and "ms/step" in line:
                inside = True
            elif inside and f and f[0] == "total":
                total, inside = line, False
            elif inside and len(f) >= 5 and number(f[3]) is not None:
                rows.append((number(f[3]), f[0], f[1], f[2]))
        out.append(f"- {cell(head)}")
        if total:
            f = total.split()
            out.append(f"  - total: {f[2]} ms per step, {f[1]} launches")
        for line in lines:
            if line.startswith("outside ops:") or line.startswith("per step:"):
                out.append(f"  - {cell(line)}")
        for ms, op, kind, launches in sorted(rows, reverse=True)[:top]:
            out.append(f"  - {op} ({kind}): {fmt(ms)} ms, {launches} launches")
    return out or ["- no profile"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--stages", required=True)
    ap.add_argument("--deadline", default="?")
    ap.add_argument("--elapsed", default="?")
    ap.add_argument("--smoke", default="0")
    a = ap.parse_args()
    kit = next((line.split(":", 1)[1].strip() for line in read_lines(a.work, "env.txt") or []
                if line.startswith("kit commit:")), "?")
    lines = [f"# gpu-check summary{' (smoke: software devices, tiny sizes)' if a.smoke == '1' else ''}", "",
             f"Elapsed {a.elapsed} s of a {a.deadline} s deadline; kit {kit}.", "", "## Stages", ""]
    lines += stage_table(a.stages)
    lines += ["", "## Machine", ""] + environment(a.work) + devices(a.work)
    lines += ["", "## Ops against the CPU (`daybreak check`)", ""] + checks(a.work)
    lines += ["", "## Training throughput", ""] + throughput(a.work)
    lines += ["", "## Where airbench94's step goes (`daybreak train --profile`)", ""] + profiles(a.work)
    lines += ["", "## Time to accuracy (airbench94)", ""] + time_to_accuracy(a.work)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
