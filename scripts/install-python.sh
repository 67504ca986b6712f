#!/usr/bin/env bash
# The project's Python side (`make install`): a venv with the package (editable) and every extra, at the versions
# pinned in constraints.txt, installed from a wheelhouse under the project's cache.
#   first run:  the pinned wheels (and the build backend the editable install needs) are downloaded or built once
#               into <cache>/wheels/<key>, <key> a hash of pyproject.toml and constraints.txt;
#   after that: the install asks no index (`--no-index`): no PyPI round trips on the critical path of `make test`
#               (measured 2026-11-27 23:47 UTC on this 2-core machine, byte-code compiled in both: 36 s for the
#               whole install from the wheelhouse, 48 s for pip's install alone resolving against PyPI), and a
#               PyPI hiccup cannot fail a warm run. Byte-code is compiled at install
#               (pip's default), never left to first import: where PYTHONDONTWRITEBYTECODE is set (this machine
#               sets it) every process would compile every module it imports, every time; a warm `make test`
#               installed with `--no-compile` ran its stage 1 in 10 min 47 s instead of about 9 min.
# <cache> is $ROCKETMQ_OPERATOR_CACHE or ~/.cache/rocketmq-operator, as for the RocketMQ distribution.
#   scripts/install-python.sh VENV PYTHON         install (what `make install` runs)
#   scripts/install-python.sh lock PYTHON         re-resolve pyproject.toml's ranges and rewrite constraints.txt
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS='.[kubernetes,dev,spark,grpc]'
cache=${ROCKETMQ_OPERATOR_CACHE:-$HOME/.cache/rocketmq-operator}

if [ "${1:-}" = lock ]; then
    python=${2:-python3.11}
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    "$python" -m venv "$scratch/venv"
    "$scratch/venv/bin/python" -m pip install --quiet "$EXTRAS"
    {
        echo "# Every Python package make install puts in the venv, pinned: scripts/install-python.sh lock $python"
        echo "# re-resolves pyproject.toml's ranges against PyPI and rewrites this file."
        "$scratch/venv/bin/python" -m pip freeze --exclude rocketmq-operator
    } >constraints.txt
    echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages pinned"
    exit 0
fi

venv=${1:?usage: scripts/install-python.sh VENV PYTHON | lock PYTHON}
python=${2:-python3.11}
key=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
wheels=$cache/wheels/$key
test -x "$venv/bin/python" || "$python" -m venv "$venv"
# One fetch at a time per cache: two installs on a fresh machine (two worktrees, or `make run` beside `make test`)
# each emptied the other's half-fetched wheelhouse (found 2026-12-01: pip's FileNotFoundError in the other's
# download). The second waits here and then finds the wheelhouse complete.
mkdir -p "$cache/wheels"
exec 9>"$cache/wheels/.lock"
flock 9
if [ ! -e "$wheels/.complete" ]; then
    echo "fetching the pinned Python packages into $wheels (once)"
    rm -rf "$wheels.partial"
    mkdir -p "$wheels.partial"
    "$venv/bin/python" -m pip wheel --quiet -w "$wheels.partial" -c constraints.txt "$EXTRAS"
    # The editable install builds the project with its build backend, in an isolated environment.
    "$venv/bin/python" -m pip download --quiet -d "$wheels.partial" 'setuptools>=77' wheel
    rm -f "$wheels.partial"/rocketmq_operator-*.whl
    touch "$wheels.partial/.complete"
    rm -rf "$wheels"
    mv "$wheels.partial" "$wheels"
fi
flock -u 9
"$venv/bin/python" -m pip install --quiet --no-index --find-links "$wheels" -c constraints.txt -e "$EXTRAS"
