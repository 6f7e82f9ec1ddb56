#!/usr/bin/env python3
"""The README's tour, run as written: every command of the fenced shell blocks under
"## A tour" runs in a fresh temporary directory against the built binary, and any exit
status other than the one the command documents fails the run.

Conventions of the tour (stated in the README too):
- a line ending in `\\` continues on the next; `#` starts a comment; comment-only lines
  and blank lines are not commands;
- `NAME=value` on a line of its own sets a variable for the commands after it (the tour's
  `T=build/cli/twinscale`);
- a trailing comment that begins with `gpu:` marks a command that needs a GPU: it is
  skipped (and counted) unless TWINSCALE_TOUR_GPU=1;
- a trailing comment that begins with `exit N:` gives the command's documented exit
  status (diagnose's 4 for findings, simulate's 5 for an incomplete job); otherwise 0;
- a command that calls `mpirun` needs Open MPI: as root it runs with
  OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (Open MPI refuses root
  otherwise); without `mpirun` on PATH it is skipped (and counted).

The temporary directory holds links to the checkout's build/, scripts/, experiments/
and examples/, so the relative paths of the tour resolve as in the checkout.

Usage: scripts/readme_tour.py [--build DIR] [--readme FILE] [--list] [--keep]
Exit 0: every command ran as documented; 1: some failed; 2: usage.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
MARK = re.compile(r"#\s*(gpu|exit\s+(\d+))\s*:")


def tour_blocks(text):
    """The fenced sh/bash blocks between '## A tour' and the next '## ' heading."""
    lines = text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "## A tour")
    except StopIteration:
        raise SystemExit("readme_tour: no '## A tour' section in the README")
    blocks, block, inside = [], None, False
    for line in lines[start + 1:]:
        if not inside and line.startswith("## "):
            break
        if line.startswith("```"):
            if inside:
                blocks.append(block)
                inside = False
            elif line.strip() in ("```sh", "```bash", "```shell"):
                inside, block = True, []
            continue
        if inside:
            block.append(line)
    return blocks


def split_comment(line):
    """(code, comment) of one physical line: '#' outside quotes after a blank starts a comment."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i:]
    return line.rstrip(), ""


def commands(blocks):
    """Logical commands: (text, marks) with continuation lines joined and comments kept apart."""
    out = []
    for block in blocks:
        pending, comments = [], []
        for raw in block:
            code, comment = split_comment(raw)
            if comment:
                comments.append(comment)
            if code.endswith("\\"):
                pending.append(code[:-1].rstrip())
                continue
            if code.strip():
                pending.append(code.strip())
            if pending:
                out.append((" ".join(pending), " ".join(comments)))
            pending, comments = [], []
    return out


def marks_of(comment):
    gpu, status = False, 0
    for m in MARK.finditer(comment):
        if m.group(1) == "gpu":
            gpu = True
        else:
            status = int(m.group(2))
    return gpu, status


def main():
    ap = argparse.ArgumentParser(description="run the README's tour as written")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (holds cli/twinscale)")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--list", action="store_true", help="print the commands and their marks, run nothing")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    a = ap.parse_args()
    with open(a.readme, encoding="utf-8") as f:
        cmds = commands(tour_blocks(f.read()))
    if not cmds:
        print("readme_tour: the tour has no command", file=sys.stderr)
        return 1
    if a.list:
        for text, comment in cmds:
            gpu, status = marks_of(comment)
            print(("[gpu] " if gpu else "") + (f"[exit {status}] " if status else "") + text)
        return 0
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "cli", "twinscale"), os.X_OK):
        print(f"readme_tour: no executable {build}/cli/twinscale (build it first, or pass --build DIR)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="twinscale-tour-")
    for name, target in (("build", build), ("scripts", os.path.join(ROOT, "scripts")),
                         ("experiments", os.path.join(ROOT, "experiments")),
                         ("examples", os.path.join(ROOT, "examples"))):
        os.symlink(target, os.path.join(work, name))
    env = dict(os.environ)
    env.pop("SLURM_ARRAY_TASK_ID", None)
    if os.geteuid() == 0:  # Open MPI refuses to start as root without both
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    have_mpirun = shutil.which("mpirun") is not None
    want_gpu = os.environ.get("TWINSCALE_TOUR_GPU") == "1"
    ran = failed = skipped_gpu = skipped_mpi = 0
    for n, (text, comment) in enumerate(cmds, 1):
        m = ASSIGN.match(text)
        if m:
            env[m.group(1)] = m.group(2)
            continue
        gpu, status = marks_of(comment)
        if gpu and not want_gpu:
            skipped_gpu += 1
            print(f"tour: skip (gpu)       {text}")
            continue
        if re.search(r"(^|[;&|]\s*)mpirun\b", text) and not have_mpirun:
            skipped_mpi += 1
            print(f"tour: skip (no mpirun) {text}")
            continue
        t0 = time.monotonic()
        try:
            p = subprocess.run(["bash", "-c", "set -o pipefail\n" + text], cwd=work, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, errors="replace", timeout=a.timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = "timeout", "", f"ran past {a.timeout:.0f} s"
        dt = time.monotonic() - t0
        ran += 1
        ok = rc == status
        print(f"tour: {'ok' if ok else 'FAILED':6} {dt:6.1f} s  {text}" + (f"   (exit {rc})" if rc else ""))
        if not ok:
            failed += 1
            print(f"  exit {rc}, the tour documents {status}; stdout ends:\n" + "".join(
                "    " + l + "\n" for l in out.splitlines()[-10:]) + "  stderr ends:\n" +
                "".join("    " + l + "\n" for l in err.splitlines()[-15:]), end="")
    print(f"tour: {ran} commands run, {failed} failed, {skipped_gpu + skipped_mpi} skipped "
          f"({skipped_gpu} need a GPU, {skipped_mpi} need mpirun)")
    if a.keep:
        print(f"tour: files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
