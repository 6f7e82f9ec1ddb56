#!/usr/bin/env bash
# ctest python_api: pytest of tests/python/ (which also runs examples/python_api.py)
# against this build's module.
#   run_pytest.sh PYTHON PACKAGE_DIR TWINSCALE_CLI
# PYTHON is the interpreter the module was built for; PACKAGE_DIR (build/python) holds the
# assembled package twinscale/ and goes on PYTHONPATH; TWINSCALE_CLI is the executable the
# tests compare against. pytest runs under PYTHON when it has pytest, else under Debian's
# /usr/bin/python3 (python3-pytest) when that is the same Python version (the module's ABI);
# otherwise the test exits 77 (skipped), saying why.
set -euo pipefail
python=$1 package_dir=$2 cli=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
if "$python" -c 'import pytest' 2>/dev/null; then
  chosen=$python
elif [ -x /usr/bin/python3 ] && [ "$(version /usr/bin/python3)" = "$(version "$python")" ] &&
  /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
  chosen=/usr/bin/python3
else
  echo "python_api: skipped: pytest is importable neither by $python (Python $(version "$python"))" \
    "nor by a /usr/bin/python3 of that version (Debian: python3-pytest)"
  exit 77
fi
echo "python_api: $("$chosen" -c 'import sys; print(sys.executable, sys.version.split()[0])'), module from $package_dir"
export PYTHONPATH="$package_dir${PYTHONPATH:+:$PYTHONPATH}" TWINSCALE_CLI="$cli" PYTHONDONTWRITEBYTECODE=1
cd "$root"
exec "$chosen" -m pytest -q -p no:cacheprovider tests/python
