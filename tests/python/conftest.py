"""Fixtures of the Python API tests: the `twinscale` executable to compare against.

ctest's python_api (tests/python/run_pytest.sh) sets TWINSCALE_CLI and puts the built
package on PYTHONPATH; by hand: PYTHONPATH=build/python python3 -m pytest tests/python.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Cli:
    """The built `twinscale` executable, run as a process."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, cwd=None):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, cwd=cwd)

    def json(self, *args, cwd=None):
        r = self.run(*args, "--json", cwd=cwd)
        assert r.returncode in (0, 4, 5), r.stderr
        return json.loads(r.stdout)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TWINSCALE_CLI", str(ROOT / "build" / "cli" / "twinscale"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no twinscale executable at {path} (set TWINSCALE_CLI)")
    return Cli(path)
