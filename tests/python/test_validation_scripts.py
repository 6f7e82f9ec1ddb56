"""Bad input to the validation experiment's scripts (experiments/validation/study.py and
estimate.py) is refused with a clear error before anything runs (exit 2, argparse)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "experiments" / "validation"


def run(script, *args, tmp_path):
    return subprocess.run([sys.executable, str(HERE / script), str(tmp_path / "out"), *args],
                          capture_output=True, text=True)


def test_gpu_override_needs_model_key_and_number(tmp_path):
    r = run("study.py", "--gpu-override", "sustained_clock_ratio=0.9", tmp_path=tmp_path)
    assert r.returncode == 2
    assert "--gpu-override 'sustained_clock_ratio=0.9': expected MODEL.KEY=NUMBER" in r.stderr
    assert not (tmp_path / "out").exists()  # nothing written


def test_gpu_override_of_a_model_no_cluster_has_is_refused(tmp_path):
    r = run("study.py", "--gpu-override", "A100-SXM-80G.sustained_clock_ratio=0.9", tmp_path=tmp_path)
    assert r.returncode == 2
    assert "no validation cluster has GPU model 'A100-SXM-80G'" in r.stderr
    assert "A100-SXM-80GB" in r.stderr  # says what would be valid
    assert not (tmp_path / "out").exists()  # nothing written


def test_estimate_refuses_values_outside_the_bounds(tmp_path):
    r = run("estimate.py", "--values", "0.94,0.9", tmp_path=tmp_path)
    assert r.returncode == 2
    assert "0.9 is outside the parameter's bounds [0.926, 1.0]" in r.stderr
    r = run("estimate.py", "--values", "fast", tmp_path=tmp_path)
    assert r.returncode == 2
    assert "--values 'fast': expected comma-separated numbers" in r.stderr
    assert not (tmp_path / "out").exists()
