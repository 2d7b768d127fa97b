#!/usr/bin/env python3
"""The user documentation against the program (ctest `docs`, label unit, well under 1 s).

usage: check_docs.py DAYBREAK SOURCE_DIR

Fails, naming what is wrong, when
- a command that `daybreak --help` lists is not shown in README.md as `daybreak <command>`;
- an option the command line parses (a "--name" string in src/app/*.c) is not in README.md;
- a relative link in README.md or docs/*.md names a file that does not exist, or an anchor
  that no heading of the target file produces (GitHub's heading slugs);
- a ```yaml block of README.md or docs/*.md is not valid YAML (the CI workflow);
- README.md, docs/*.md, docs/measurements/*.md, cl/README.md or shaders/README.md hold a
  development machine's path (/work/..., /home/..., /root/...; /tmp/... outside code) or an
  issue number ("issue 12", "#12");
- a variable of README.md's Environment table is missing from `daybreak --help`;
- docs/architecture.md's Layout lists a folder or names a file that does not exist, or a
  folder under src/ has no row of its own there;
- one of a sample of error paths (bad values, unknown names, missing files; nothing that needs
  data or a device) does not exit with the code README.md's "Exit codes" table gives its kind
  of error, or does not print exactly one line on stderr, `daybreak: error: ...`, the format
  README.md promises.
"""
import os
import re
import subprocess
import sys
import tempfile


def fail_or_skip_in_ci(message):
    """A missing tool is a skip (77) by hand and a failure with CI=true, as tests/test_util.h does."""
    if os.environ.get("CI") == "true":
        print(f"FAIL: {message} (required with CI=true)")
        sys.exit(1)
    print(f"SKIP: {message}")
    sys.exit(77)


def help_commands(daybreak):
    out = subprocess.run([daybreak, "--help"], capture_output=True, text=True, check=True).stdout
    section = out.split("commands:", 1)[1].split("\n\n", 1)[0]
    commands = [line.split()[0] for line in section.splitlines() if line.strip()]
    if len(commands) < 5:
        raise SystemExit(f"FAIL: could not read the command list of 'daybreak --help':\n{out}")
    return commands


def parsed_options(src):
    app = os.path.join(src, "src", "app")
    options = set()
    for name in sorted(os.listdir(app)):
        if name.endswith(".c"):
            with open(os.path.join(app, name), encoding="utf-8") as f:
                options.update(re.findall(r'"(--[a-z0-9][a-z0-9-]*)', f.read()))
    return options


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def layout_entries(text):
    """The (folder, description) rows of architecture.md's Layout block: a path at column 0, its
    description on the rest of the line and the indented lines below it."""
    block = text.split("## Layout\n", 1)[1].split("```", 2)[1]
    entries = []
    for line in block.splitlines()[1:]:
        if line and not line[0].isspace():
            folder, _, rest = line.partition(" ")
            entries.append([folder.rstrip("/"), rest])
        elif entries:
            entries[-1][1] += " " + line.strip()
    return entries


ROOT_PATH = re.compile(r"\b((?:src|cl|shaders|tests|tools|fuzz)/[\w/.{},-]*\w[}]?)")
FILE_NAME = re.compile(r"(?<![\w/<>.{-])([A-Za-z_][\w-]*\.(?:c|h|cmake|py|sh))\b")


def expand_braces(path):
    """memplan.{h,c} -> memplan.h, memplan.c"""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [path[:m.start()] + alt + path[m.end():] for alt in m.group(1).split(",")]


def check_architecture(src, problems):
    """docs/architecture.md against the tree: every folder of its Layout exists, every file it
    names there (in that folder) or anywhere as a path under the repository exists, and every
    folder under src/ has its own Layout row."""
    page = os.path.join(src, "docs", "architecture.md")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    if "## Layout\n" not in text:
        problems.append(f"{page}: no '## Layout' section")
        return 0
    entries = layout_entries(text)
    named = 0
    for folder, description in entries:
        if not os.path.isdir(os.path.join(src, folder)):
            problems.append(f"{page}: the Layout lists {folder}/, which does not exist")
            continue
        for name in FILE_NAME.findall(ROOT_PATH.sub("", description)):
            named += 1
            if not os.path.isfile(os.path.join(src, folder, name)):
                problems.append(f"{page}: the Layout names {name} in {folder}/, which does not exist")
    for path in ROOT_PATH.findall(text):
        if "<" in path or "*" in path:
            continue
        for p in expand_braces(path.rstrip(".,")):
            named += 1
            if not os.path.exists(os.path.join(src, p)):
                problems.append(f"{page}: names {p}, which does not exist")
    listed = {folder for folder, _ in entries}
    for root, dirs, _ in os.walk(os.path.join(src, "src")):
        dirs.sort()
        for d in dirs:
            rel = os.path.relpath(os.path.join(root, d), src).replace(os.sep, "/")
            if rel not in listed:
                problems.append(f"{page}: the folder {rel}/ is not in the Layout")
    return named


# A development machine's own folders ("/work/..." names the pattern, not a path); /tmp only
# inside code (an example command's scratch folder), never in the text; an issue of the
# tracker by number, which a reader cannot follow.
MACHINE_PATH = re.compile(r"(?<![\w.~$])/(?:work|home|root|Users|mnt|scratch)/(?!\.\.\.)[^\s`)'\"]*")
TMP_PATH = re.compile(r"(?<![\w.~$])/tmp/[^\s`)'\"]*")
ISSUE_REF = re.compile(r"\b[Ii]ssues?[ -]?#?\d+|(?<![\w&/#])#\d+\b(?![\w-])")


def check_machine_paths_and_issues(path, problems):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
    for n, line in enumerate(text.splitlines(), 1):
        for m in MACHINE_PATH.findall(line):
            problems.append(f"{path}:{n}: a development machine's path {m.rstrip('.,;:')} (write a generic one: /path/to/data)")
        for m in ISSUE_REF.findall(line):
            problems.append(f"{path}:{n}: an issue number ('{m}') a reader cannot follow: say what it was")
    for m in TMP_PATH.findall(prose):
        problems.append(f"{path}: the path {m.rstrip('.,;:')} in the text, outside an example command")


def check_links(path, problems):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            problems.append(f"{path}: link to {target}: {dest} does not exist")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append(f"{path}: link to {target}: no heading in {dest} gives #{anchor}")


def check_yaml_blocks(path, problems):
    with open(path, encoding="utf-8") as f:
        blocks = re.findall(r"```yaml\n(.*?)```", f.read(), flags=re.S)
    if not blocks:
        return 0
    try:
        import yaml
    except ImportError:
        fail_or_skip_in_ci("python3-yaml is not installed (Debian: python3-yaml)")
    for block in blocks:
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError as e:
            problems.append(f"{path}: a yaml block does not parse: {e}")
            continue
        if not isinstance(doc, dict):
            problems.append(f"{path}: a yaml block is not a mapping")
    return len(blocks)


def readme_table(readme, heading):
    """The rows (first cell, second cell) of the first table after '### heading'."""
    part = readme.split(f"### {heading}\n", 1)
    if len(part) < 2:
        return {}
    rows = {}
    for line in part[1].lstrip("\n").split("\n\n", 1)[0].splitlines()[2:]:   # past the header and rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and not set(cells[0]) <= set("-: "):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def check_environment(daybreak, readme, problems):
    variables = readme_table(readme, "Environment")
    if len(variables) < 5:
        problems.append("README.md: could not read the Environment table")
    out = subprocess.run([daybreak, "--help"], capture_output=True, text=True, check=True).stdout
    for name in (n for cell in variables for n in re.findall(r"[A-Z][A-Z0-9_]{2,}", cell)):
        if name not in out:
            problems.append(f"'daybreak --help' does not list {name}, which README.md's Environment table does")


# (arguments, environment, the exit code, words of README.md's row for that code that say why).
# Every path here fails before reading data or opening a device.
ERROR_PATHS = [
    (["frobnicate"], {}, 2, "unknown command"),
    (["help", "frobnicate"], {}, 2, "unknown command"),
    (["train", "--frobnicate"], {}, 2, "unknown command or option"),
    (["train", "--seed", "x"], {}, 2, "bad option value"),
    (["train", "--seed", "18446744073709551616"], {}, 2, "bad option value"),
    (["train", "--seed", "9007199254740992"], {}, 2, "bad option value"),
    (["bench", "--runs", "3", "--seed0", "9007199254740990"], {}, 2, "bad option value"),
    (["train", "--epochs", "0"], {}, 2, "bad option value"),
    (["train", "--backend", "opencl:x"], {}, 2, "bad option value"),
    (["train", "--backend", "opencl:-1"], {}, 2, "bad option value"),
    (["train", "--out", ""], {}, 2, "bad option value"),
    (["infer", "--checkpoint", "m.ckpt", "--out", ""], {}, 2, "bad option value"),
    (["report", "r", "--out", ""], {}, 2, "bad option value"),
    (["bench", "--runs", "0"], {}, 2, "bad option value"),
    (["train", "--recipe", "nope"], {}, 1, "unknown recipe"),
    (["train", "--backend", "nope"], {}, 1, "unknown recipe/backend/device"),
    (["train", "--backend", "cpu:7"], {}, 1, "device"),
    (["train", "--backend", "cpu", "--data", "/nonexistent/daybreak-data"], {}, 1, "missing data"),
    (["eval", "--checkpoint", "/nonexistent/model.ckpt"], {}, 1, "I/O"),
    (["report", "/nonexistent/daybreak-runs"], {}, 1, "I/O"),
    (["platforms"], {"DBK_PLATFORMS_DIR": "/nonexistent/daybreak-profiles"}, 1, "I/O"),
    # a symlink loop is named as one, not as a missing path
    (["train", "--backend", "cpu", "--data", "{loop}"], {}, 1, "I/O", "Too many levels of symbolic links"),
    (["report", "{loop}"], {}, 1, "I/O", "Too many levels of symbolic links"),
    (["eval", "--checkpoint", "{loop}"], {}, 1, "I/O", "Too many levels of symbolic links"),
]


def check_error_paths(daybreak, readme, problems):
    if "Every\nerror is one line on stderr, `daybreak: error: <what failed and why>`" not in readme:
        problems.append("README.md no longer states the error format this check holds the program to")
    codes = readme_table(readme, "Exit codes")
    with tempfile.TemporaryDirectory() as tmp:
        loop = os.path.join(tmp, "loop")
        os.symlink(os.path.join(tmp, "loop2"), loop)
        os.symlink(loop, os.path.join(tmp, "loop2"))
        for path in ERROR_PATHS:
            args, extra, code, why = path[:4]
            args = [a.replace("{loop}", loop) for a in args]
            check_error_path(daybreak, codes, args, extra, code, why, path[4] if len(path) > 4 else "", problems)
    return len(ERROR_PATHS)


def check_error_path(daybreak, codes, args, extra, code, why, needle, problems):
    """One error path: its exit code against README.md's row, one 'daybreak: error:' line naming needle."""
    row = codes.get(str(code), "")
    if why not in row:
        problems.append(f"README.md: the exit code {code} row does not say '{why}' (for daybreak {' '.join(args)})")
    env = {k: v for k, v in os.environ.items() if k not in ("DAYBREAK_DATA", "DBK_BACKEND")}
    env.update(extra)
    r = subprocess.run([daybreak] + args, capture_output=True, text=True, env=env, timeout=60)
    shown = "daybreak " + " ".join(repr(a) if not a or " " in a else a for a in args)
    lines = r.stderr.splitlines()
    if r.returncode != code:
        problems.append(f"{shown}: exit {r.returncode}, README.md says {code} ({why}); stderr: {r.stderr!r}")
    if len(lines) != 1 or not lines[0].startswith("daybreak: error: ") or len(lines[0]) <= 17:
        problems.append(f"{shown}: stderr is not one 'daybreak: error: ...' line: {r.stderr!r}")
    if re.search(r"\bdbk_[a-z0-9_]+", r.stderr):
        problems.append(f"{shown}: the message names an internal function: {r.stderr!r}")
    if needle not in r.stderr:
        problems.append(f"{shown}: the message does not say '{needle}': {r.stderr!r}")


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: check_docs.py DAYBREAK SOURCE_DIR")
    daybreak, src = sys.argv[1], sys.argv[2]
    readme_path = os.path.join(src, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    problems = []
    for command in help_commands(daybreak):
        if command != "help" and f"daybreak {command}" not in readme:
            problems.append(f"README.md: the command '{command}' of 'daybreak --help' is not documented")
    for option in sorted(parsed_options(src)):
        if not re.search(re.escape(option) + r"(?![a-z0-9-])", readme):
            problems.append(f"README.md: the option '{option}' parsed in src/app is not documented")
    docs = os.path.join(src, "docs")
    pages = [readme_path] + [os.path.join(src, d, "README.md") for d in ("cl", "shaders")]
    for folder in (docs, os.path.join(docs, "measurements")):
        if os.path.isdir(folder):
            pages += sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".md"))
    yaml_blocks = 0
    for page in pages:
        check_links(page, problems)
        check_machine_paths_and_issues(page, problems)
        yaml_blocks += check_yaml_blocks(page, problems)
    if yaml_blocks == 0:
        problems.append("README.md: no yaml block (the CI workflow) found")
    check_environment(daybreak, readme, problems)
    architecture_paths = check_architecture(src, problems)
    errors = check_error_paths(daybreak, readme, problems)
    for p in problems:
        print("FAIL:", p)
    if problems:
        sys.exit(1)
    print(f"docs: {len(pages)} pages, links resolve, {yaml_blocks} yaml block(s) parse, "
          f"architecture.md lists every src/ folder and its {architecture_paths} paths exist, "
          f"every command, option and environment variable documented, {errors} error paths exit "
          f"as README.md says with one 'daybreak: error:' line")


if __name__ == "__main__":
    main()
