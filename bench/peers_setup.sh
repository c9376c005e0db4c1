#!/usr/bin/env bash
# Create the virtualenvs of the in-memory peers the benchmarks compare against:
#   bench/.peers/seomoz   simhash-pybind (seomoz's C++ find_all / find_clusters)
#   bench/.peers/simhash  the simhash package's SimhashIndex (needs numpy < 2)
# Two venvs because both packages install a top-level module named "simhash".
# Idempotent; re-run to repair. PYTHON picks the interpreter (default python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"

make_venv() {  # name, then the packages
    local venv="$here/.peers/$1"
    shift
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

make_venv seomoz "numpy<2" "simhash-pybind==0.0.3"
make_venv simhash "numpy<2" "simhash==2.1.2"
"$here/.peers/seomoz/bin/python" -c "import simhash; simhash.find_all; print('seomoz peer ready')"
"$here/.peers/simhash/bin/python" -c "import simhash; simhash.SimhashIndex; print('simhash peer ready')"
