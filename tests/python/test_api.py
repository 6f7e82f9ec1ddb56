"""The Python API (`import twinscale`) against the `twinscale` executable it mirrors:
the same JSON objects, the same error messages."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import twinscale

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mode", ["analytic", "flow"])
def test_simulate_equals_the_cli_json(cli, mode):
    expected = cli.json("simulate", "--preset", "tiny-megascale", "--mode", mode)
    got = twinscale.simulate(preset="tiny-megascale", mode=mode)
    assert got == expected
    assert got["mfu"] == expected["mfu"] and 0 < got["mfu"] < 1
    assert isinstance(got["per_stage"], twinscale.Table) and len(got["per_stage"]) == 2


def test_simulate_options_are_the_cli_options(cli):
    expected = cli.json("simulate", "--preset", "tiny-interleaved", "--mode", "analytic", "--gpus", "16",
                        "--global-batch", "32", "--placement", "tor-aware", "--every-rank")
    got = twinscale.simulate(preset="tiny-interleaved", mode="analytic", gpus=16, global_batch=32,
                             placement="tor-aware", every_rank=True)
    assert got == expected
    assert got["gpus"] == 16


def test_simulate_per_rank_table(tmp_path):
    r = twinscale.simulate(preset="tiny-megascale", mode="analytic", per_rank=True)
    rows = r["per_rank"]
    assert [row["rank"] for row in rows] == list(range(8))
    assert set(rows[0]) == {"rank", "tp", "pp", "dp", "forward_s", "backward_s", "comm_wait_s"}
    assert all(row["forward_s"] > 0 for row in rows)


def test_a_bad_preset_raises_the_cli_message(cli):
    run = cli.run("simulate", "--preset", "no-such-job")
    with pytest.raises(twinscale.Error) as caught:
        twinscale.simulate(preset="no-such-job")
    e = caught.value
    assert isinstance(e, twinscale.InputError) and isinstance(e, twinscale.ConfigError)
    assert "no-such-job" in str(e) and "tiny-megascale" in str(e)  # names the bad and the valid
    assert run.stderr == f"twinscale: error: {e}\n"
    assert run.returncode == e.exit_code == 1


def test_a_missing_job_file_raises_the_cli_message(cli, tmp_path):
    missing = tmp_path / "missing.toml"
    run = cli.run("schedule", "show", missing)
    with pytest.raises(twinscale.InputError) as caught:
        twinscale.schedule(job=missing)
    assert str(missing) in str(caught.value)
    assert run.stderr == f"twinscale: error: {caught.value}\n"
    with pytest.raises(twinscale.InputError) as loaded:
        twinscale.load_job(missing)
    assert str(loaded.value) == str(caught.value)


def test_a_bad_option_value_is_a_usage_error(cli):
    run = cli.run("simulate", "--preset", "tiny-megascale", "--mode", "packet")
    with pytest.raises(twinscale.UsageError) as caught:
        twinscale.simulate(preset="tiny-megascale", mode="packet")
    assert "packet" in str(caught.value) and str(caught.value) in run.stderr
    assert run.returncode == caught.value.exit_code == 2
    with pytest.raises(twinscale.UsageError, match="--no-such-option"):
        twinscale.simulate(preset="tiny-megascale", no_such_option=1)
    with pytest.raises(twinscale.UsageError):
        twinscale.simulate()  # neither a job file nor a preset


def test_an_out_of_range_number_is_input_error(cli):
    run = cli.run("simulate", "--preset", "tiny-megascale", "--gpus", "0")
    with pytest.raises(twinscale.ConfigError) as caught:
        twinscale.simulate(preset="tiny-megascale", gpus=0)
    assert run.stderr == f"twinscale: error: {caught.value}\n"


def test_load_job_is_the_schedule_job(cli):
    job = twinscale.load_job(preset="tiny-megascale")
    assert job == cli.json("schedule", "show", "--preset", "tiny-megascale")["job"]
    assert {"name", "model", "parallel", "schedule", "cluster"} <= set(job)
    assert job["name"] == "tiny-megascale"
    wider = twinscale.load_job(preset="tiny-megascale", gpus=16)
    p, q = job["parallel"], wider["parallel"]
    assert q["dp"] == 2 * p["dp"] and (q["tp"], q["pp"]) == (p["tp"], p["pp"])
    from_file = twinscale.load_job(ROOT / "presets" / "jobs" / "tiny-megascale.toml")
    assert from_file == job
    with pytest.raises(twinscale.UsageError):
        twinscale.load_job()


def test_schedule_summary_and_file(cli):
    summary = twinscale.schedule(preset="tiny-megascale")
    assert summary == cli.json("schedule", "show", "--preset", "tiny-megascale")
    assert summary["ranks"] == 8 and summary["programs"] >= 1
    full = twinscale.schedule(preset="tiny-megascale", full=True)
    assert full["job"] == summary["job"]
    assert "programs" in full


def test_campaign_equals_the_cli_json(cli):
    expected = cli.json("campaign", "--preset", "tiny-megascale", "--days", "2", "--seeds", "2")
    got = twinscale.campaign(preset="tiny-megascale", days=2, seeds=2)
    assert got == expected
    assert 0 < got["result"]["ettr"]["mean"] <= 1
    assert [run["seed"] for run in got["result"]["runs"]] == [1, 2]  # a Table: one row per seed
    assert isinstance(got["result"]["runs"], twinscale.Table)
    assert got["iteration_time_source"]["kind"] == "simulated"


def test_diagnose_finds_a_slow_rank(cli, tmp_path):
    speeds = tmp_path / "speeds.csv"
    speeds.write_text("scope,index,factor\nrank,3,0.5\n")
    per_rank = tmp_path / "per_rank.csv"
    twinscale.simulate(preset="tiny-megascale", mode="analytic", every_rank=True, gpu_speed_file=speeds,
                       per_rank_csv=per_rank)
    got = twinscale.diagnose(per_rank)
    assert got == cli.json("diagnose", per_rank)
    assert [f["kind"] for f in got["findings"]] == ["straggler"]
    assert got["findings"][0]["ranks"] == [3]
    scores = got.table("rank_scores")
    assert [row["rank"] for row in scores] == list(range(8))
    assert max(scores, key=lambda row: row["excess"])["rank"] == 3
    with pytest.raises(twinscale.InputError) as caught:
        twinscale.diagnose(tmp_path / "none.csv")
    assert cli.run("diagnose", tmp_path / "none.csv").stderr == f"twinscale: error: {caught.value}\n"


def test_sweep_rows(tmp_path):
    study = tmp_path / "tiny.toml"
    study.write_text('name = "tiny-py"\n[base]\njob = "tiny-megascale"\ngpus = 16\n'
                     "[axes]\ntp = [1, 2]\npp = [1, 2]\n")
    db = tmp_path / "tiny.db"
    r = twinscale.sweep(study, db=db)
    assert r["db"] == str(db) and db.exists()
    rows = r["rows"]
    assert [row["id"] for row in rows] == [0, 1, 2, 3]
    assert {(row["tp"], row["pp"]) for row in rows} == {(1, 1), (1, 2), (2, 1), (2, 2)}
    ok = [row for row in rows if row["status"] == "ok"]
    assert ok and all(0 < row["mfu"] < 1 for row in ok)
    assert "tiny-py" in r["summary"]
    threaded = twinscale.sweep(study, db=tmp_path / "threads.db", threads=2)
    assert threaded["rows"] == rows  # the same points, stored in the same order


def test_tables_convert_to_pandas():
    r = twinscale.simulate(preset="tiny-megascale", mode="analytic")
    assert r.table("per_stage") == r["per_stage"]
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r["per_stage"].to_pandas()
        return
    frame = r["per_stage"].to_pandas()
    assert list(frame["stage"]) == [0, 1]


def test_cli_runs_any_sub_command(cli):
    got = twinscale.cli("topology", "show", preset="tiny-2tier", json=True)
    assert got.returncode == 0
    assert json.loads(got.stdout) == cli.json("topology", "show", "--preset", "tiny-2tier")
    assert "tiny-megascale" in twinscale.presets("jobs")
    help_text = twinscale.cli("simulate", help=True)
    assert help_text.returncode == 0 and "--every-rank" in help_text.stdout
    assert help_text.stdout == cli.run("simulate", "--help").stdout.replace(cli.path, "twinscale")
    with pytest.raises(twinscale.UsageError, match="unknown sub-command"):
        twinscale.cli("no-such-command")


def test_the_example_runs(tmp_path):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python_api.py")], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "MFU" in r.stdout and "straggler" in r.stdout
