"""twinscale from Python: the `twinscale` commands as functions returning Python objects.

    import twinscale
    r = twinscale.simulate(preset="tiny-megascale", mode="analytic")
    r["mfu"], r["breakdown"]["bubble_s"], r["per_stage"].to_pandas()

Each function runs the code of the `twinscale` sub-command of the same name inside this
process (the compiled module registers the CLI's own commands) and returns what that
command prints with --json, parsed: ``twinscale.simulate(preset=P, gpus=N)`` equals
``json.loads(twinscale simulate --preset P --gpus N --json)``. Keyword options are the
command's long options with "_" for "-": ``simulate(every_rank=True,
gpu_speed_dist="normal:0.02")`` is ``--every-rank --gpu-speed-dist normal:0.02``; True
gives a flag, None or False leaves the option out. Bad input raises a subclass of
``twinscale.Error`` (twinscale.errors) carrying the message the CLI prints. What the
commands log on stderr goes to the ``logging`` logger "twinscale" (level INFO).

Lists of rows (per stage, per rank, per point) are ``Table`` objects: plain lists of
dicts that also convert to a pandas DataFrame with ``.to_pandas()`` where pandas is
installed (pandas is not required). A result is a ``Result``, a dict whose ``table(key)``
also turns a columnar table (``diagnose``'s "rank_scores" and "rank_scores_columns") into
a Table.
"""

import csv
import json
import logging
import os
import tempfile
from collections import namedtuple
from pathlib import Path

from . import errors
from ._twinscale import job_json as _job_json
from ._twinscale import preset_names as _preset_names
from ._twinscale import run as _run
from ._twinscale import version as __version__
from .errors import *  # noqa: F401,F403 (twinscale.Error, twinscale.InputError, ...)

_log = logging.getLogger("twinscale")

Completed = namedtuple("Completed", "returncode stdout stderr")


class Table(list):
    """Rows of a table (per stage, per rank, per study point): a list of dicts."""

    def to_pandas(self):
        """The rows as a pandas DataFrame (needs pandas; Debian: python3-pandas)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Table.to_pandas() needs pandas (Debian: python3-pandas); "
                              "the rows are also a plain list of dicts") from e
        return pandas.DataFrame(list(self))


class Result(dict):
    """A command's --json object (a dict, equal to the parsed CLI output)."""

    def table(self, key):
        """A columnar table of the result as a Table: `key` holds rows of values and
        `key + "_columns"` their names (diagnose's "rank_scores"), or `key` already holds
        a list of objects (simulate's "per_stage")."""
        if key + "_columns" in self:
            columns = self[key + "_columns"]
            return Table(dict(zip(columns, row)) for row in self[key])
        value = self[key]
        if isinstance(value, Table):
            return value
        raise KeyError(f"{key!r} is not a table of this result (tables: {', '.join(self.tables())})")

    def tables(self):
        """Keys that table() accepts."""
        return [k for k, v in self.items()
                if isinstance(v, Table) or (not k.endswith("_columns") and k + "_columns" in self)]


def _text(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back as the same double
    return str(value)


def _argv(words, positionals=(), options=None):
    """Sub-command words, then --options, then positionals (after "--": a path may start with -)."""
    args = [str(w) for w in words]
    for key, value in (options or {}).items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, _text(v)]
        else:
            args += [flag, _text(value)]
    positionals = [_text(p) for p in positionals if p is not None]
    if positionals:
        args += ["--"] + positionals
    return args


def cli(*args, **options):
    """Runs ``twinscale ARGS... --OPTIONS`` in this process and returns
    Completed(returncode, stdout, stderr) as text: any sub-command, e.g.
    ``cli("topology", "show", preset="megascale-ampere", json=True)``. Raises
    twinscale.Error subclasses as the functions do."""
    rc, out, err = _run(_argv(args, options=options))
    return Completed(rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def _tables(value):
    """JSON values with every list of objects as a Table (equal to the plain list)."""
    if isinstance(value, dict):
        return {k: _tables(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_tables(v) for v in value]
        return Table(items) if items and all(isinstance(v, dict) for v in items) else items
    return value


def _json_command(words, positionals=(), options=None):
    """The parsed --json output of one sub-command (its stderr logged)."""
    options = dict(options or {})
    options["json"] = True
    rc, out, err = _run(_argv(words, positionals, options))
    for line in err.decode("utf-8", "replace").splitlines():
        _log.info("%s", line)
    text = out.decode("utf-8", "replace")
    try:
        value = _tables(json.loads(text))
        return Result(value) if isinstance(value, dict) else value
    except json.JSONDecodeError as e:
        raise errors.InternalError(f"twinscale {' '.join(words)} --json printed no JSON "
                                   f"(exit {rc}): {e}; output: {text[:200]!r}") from None


def _job_words(job):
    """The positional JOB file (a path) beside --preset; the CLI checks exactly one is given."""
    return [] if job is None else [job]


def _rows(path):
    """A CSV file as a Table; numbers as int or float, empty cells as None."""
    def value(cell):
        if cell == "":
            return None
        for kind in (int, float):
            try:
                return kind(cell)
            except ValueError:
                pass
        return cell

    with open(path, newline="") as f:
        return Table({k: value(v) for k, v in row.items()} for row in csv.DictReader(f))


def presets(kind="jobs"):
    """Built-in preset names of one kind: "jobs", "clusters", "faults" or "recovery"."""
    return list(_preset_names(kind))


def load_job(path=None, preset=None, gpus=None, global_batch=None):
    """The job of a TOML file or a preset, after the gpus (dp re-derived) and global_batch
    overrides, as a dict: model, parallel, options, cluster ... (the "job" object of a
    schedule file)."""
    if (path is None) == (preset is None):
        raise errors.UsageError("give exactly one of a job file (path=FILE) or preset=NAME")
    return json.loads(_job_json("" if path is None else _text(path), preset or "", gpus, global_batch))


def schedule(job=None, preset=None, gpus=None, global_batch=None, full=False, **options):
    """`twinscale schedule show --json`: the lowered schedule's summary (job, ranks,
    programs, ops by kind, FLOPs, bytes per group, memory). With full=True the schedule
    file itself (`schedule export`): every distinct program and its ops."""
    options.update(preset=preset, gpus=gpus, global_batch=global_batch)
    if not full:
        return _json_command(["schedule", "show"], _job_words(job), options)
    with tempfile.TemporaryDirectory(prefix="twinscale-") as tmp:
        out = os.path.join(tmp, "schedule.json")
        options["out"] = out
        cli_args = _argv(["schedule", "export"], _job_words(job), options)
        _, _, err = _run(cli_args)
        for line in err.decode("utf-8", "replace").splitlines():
            _log.info("%s", line)
        with open(out) as f:
            return json.load(f)


def simulate(preset=None, job=None, gpus=None, global_batch=None, mode=None, cluster=None, per_rank=False,
             **options):
    """`twinscale simulate --json`: one iteration of a job on a model of its cluster.

    mode "flow" (the CLI's default: SimGrid, contention) or "analytic"; cluster a preset
    or file (default: the job's). Any other option of `twinscale simulate` by keyword
    (placement, seed, every_rank, gpu_speed_dist, faults, calibration, trace, ranks, ...).
    The dict is the CLI's: iteration_time_s, tokens_per_s, tflops_per_gpu, mfu (None when
    the job did not complete: see "completed" and "failure"), breakdown, per_stage, ...
    per_rank=True adds "per_rank": a Table of rank, tp, pp, dp, forward_s, backward_s,
    comm_wait_s (the --per-rank-csv file)."""
    options.update(preset=preset, gpus=gpus, global_batch=global_batch, mode=mode, cluster=cluster)
    if not per_rank:
        return _json_command(["simulate"], _job_words(job), options)
    with tempfile.TemporaryDirectory(prefix="twinscale-") as tmp:
        options["per_rank_csv"] = os.path.join(tmp, "per_rank.csv")
        result = _json_command(["simulate"], _job_words(job), options)
        result["per_rank"] = _rows(options["per_rank_csv"])
        return result


def campaign(preset=None, job=None, gpus=None, global_batch=None, faults=None, recovery=None, days=None,
             seeds=None, **options):
    """`twinscale campaign --json`: weeks of training under a fault model and a recovery
    policy (presets or TOML files): the effective setup and "result" (ETTR with its
    confidence interval, lost work, time by state and by cause). Other options by keyword:
    seed, iteration_time, checkpoint_interval, cluster, sim_mode, placement, sim_seed, out."""
    options.update(preset=preset, gpus=gpus, global_batch=global_batch, faults=faults, recovery=recovery,
                   days=days, seeds=seeds)
    return _json_command(["campaign"], _job_words(job), options)


def tune_checkpoint(preset=None, job=None, gpus=None, global_batch=None, **options):
    """`twinscale tune-checkpoint --json`: the checkpoint interval swept under faults,
    against Young's and Daly's formulas (options as campaign's, plus min, max, points)."""
    options.update(preset=preset, gpus=gpus, global_batch=global_batch)
    return _json_command(["tune-checkpoint"], _job_words(job), options)


def sweep(study, db=None, top=None, **options):
    """`twinscale sweep STUDY.toml`: a parameter study into its SQLite results store
    (default: STUDY's stem + ".db" in the current directory, as the CLI; rerunning
    resumes), then `sweep show`. Returns {"db": path, "summary": the text `sweep show`
    prints (best points, Pareto front), "rows": a Table of every point (id, the axes,
    status, reason, the effective layout and every output)}. Options are the CLI's, e.g.
    threads=4 (`--threads 4`: an analytic study's points on 4 threads of the one process)."""
    db = _text(db) if db is not None else Path(_text(study)).stem + ".db"
    options.update(db=db, top=top)
    options.setdefault("progress", "never")
    _, _, err = _run(_argv(["sweep"], [study], options))
    for line in err.decode("utf-8", "replace").splitlines():
        _log.info("%s", line)
    with tempfile.TemporaryDirectory(prefix="twinscale-") as tmp:
        rows_csv = os.path.join(tmp, "rows.csv")
        shown = cli("sweep", "show", db, top=top, csv=rows_csv)
        return {"db": db, "summary": shown.stdout, "rows": _rows(rows_csv)}


def diagnose(*runs, layout=None, **options):
    """`twinscale diagnose RUN... --json`: stragglers, slow hosts and links, hangs and late
    launchers of a run (a trace, a per-rank CSV or a run directory; several: successive
    steps of one job). layout is (tp, dp, pp), "TPxDPxPP" or "tp8xdp192xpp8"; other options by keyword:
    gpus_per_host, world, links, min_excess, min_z, baseline_steps. The dict has the
    findings (empty when nothing was found: the CLI then exits 0, else 4)."""
    if len(runs) == 1 and isinstance(runs[0], (list, tuple)):
        runs = tuple(runs[0])
    if isinstance(layout, (list, tuple)):
        layout = "x".join(str(int(v)) for v in layout)
    options.update(layout=layout)
    return _json_command(["diagnose"], runs, options)


__all__ = [
    "load_job", "schedule", "simulate", "campaign", "tune_checkpoint", "sweep", "diagnose", "presets", "cli",
    "Table", "Result", "Completed", "errors", "__version__",
] + errors.__all__
