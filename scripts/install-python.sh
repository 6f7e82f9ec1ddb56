#!/usr/bin/env bash
# Makes `import twinscale` work for the python3 on PATH (or $PYTHON): writes twinscale.pth
# into that interpreter's site-packages (its user site when that is not writable), naming
# build/python, where the build assembles the package (python/CMakeLists.txt): the
# compiled module _twinscale plus the pure-Python twinscale/. A rebuild is picked up
# without reinstalling; deleting the .pth file undoes it. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
package_dir="$PWD/build/python"
if ! compgen -G "$package_dir/twinscale/_twinscale*.so" >/dev/null; then
  echo "install-python: no module in $package_dir: it is built only where CMake finds pybind11 (pybind11-dev)" \
    "and the development headers of $($python -c 'import sys; print(sys.executable)') (see the configure output)" >&2
  exit 1
fi
site=$("$python" - <<'PY'
import os, site, sysconfig
candidates = [sysconfig.get_paths()["purelib"]]
if site.ENABLE_USER_SITE:
    candidates.append(site.getusersitepackages())
for d in candidates:
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        continue
    if os.access(d, os.W_OK):
        print(d)
        break
PY
)
if [ -z "$site" ]; then
  echo "install-python: no writable site-packages for $python; use PYTHONPATH=$package_dir instead" >&2
  exit 1
fi
echo "$package_dir" >"$site/twinscale.pth"
if ! (cd / && "$python" -c 'import twinscale' 2>/dev/null); then
  rm -f "$site/twinscale.pth"
  echo "install-python: $python cannot import the module built in $package_dir (built for another Python?);" \
    "rebuild with -DPython3_EXECUTABLE=\$(command -v $python)" >&2
  (cd / && "$python" -c 'import twinscale') || true
  exit 1
fi
(cd / && "$python" -c 'import twinscale; print("install-python: twinscale", twinscale.__version__, "importable by", __import__("sys").executable, "from", twinscale.__file__)')
