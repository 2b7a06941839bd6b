#!/usr/bin/env bash
# mypy over the repository's own files. The folders service/ ingest/ attribution/ simulate/ are installed
# as faultgraph.service etc. (pyproject's package-dir), a mapping mypy cannot follow, so a farm
# of symlinks in a temporary directory gives it the installed layout. Only .py files are linked:
# a data folder next to a module of the same name (ingest/catalogue/ beside catalogue.py) would
# otherwise be taken for a namespace package. Settings: [tool.mypy] in pyproject.toml (strict
# on the attribution engine's core). Extra arguments go to mypy.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
farm="$(mktemp -d "${TMPDIR:-/tmp}/faultgraph-mypy.XXXXXX")"
trap 'rm -rf "$farm"' EXIT
for part in service ingest attribution simulate train; do
  [ -d "$repo/$part" ] || continue
  (cd "$repo" && find "$part" -name '*.py' -not -path '*/__pycache__/*') | while read -r file; do
    mkdir -p "$farm/faultgraph/$(dirname "$file")"
    ln -s "$repo/$file" "$farm/faultgraph/$file"
  done
done
cd "$repo"
# Errors name the repository's files (service/app.py:12), not the farm's links.
set +e
MYPYPATH="$farm" python -m mypy --config-file "$repo/pyproject.toml" \
  --namespace-packages --explicit-package-bases --cache-dir "$farm/.mypy_cache" "$@" -p faultgraph \
  | sed "s|$farm/faultgraph/||"
status="${PIPESTATUS[0]}"
exit "$status"
