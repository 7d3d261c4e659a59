# Sourced by scripts/demo and scripts/test: create or reuse the local virtual environment.
# Usage: source scripts/env.sh [EXTRAS]   (EXTRAS: "", "test", "test,bench", ...)
# Idempotent: a stamp records what was installed; a second run with the same pyproject reuses it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CORPUSPREP_VENV:-$ROOT/.venv}"
EXTRAS="${1:-}"
PYTHON_BIN="${PYTHON:-python3}"
STAMP="$VENV/.corpusprep-stamp"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/scripts/env.sh" | sha256sum | cut -c1-16) [$EXTRAS]"

if [ ! -f "$STAMP" ] || ! grep -qxF -- "$want" "$STAMP"; then
  if [ ! -x "$VENV/bin/python" ]; then
    # A suitable torch already installed (e.g. a CUDA image)? Let the venv see it rather than download another.
    site=""
    if "$PYTHON_BIN" -c "import torch, sys; sys.exit(tuple(map(int, torch.__version__.split('.')[:2])) < (2, 3))" 2>/dev/null; then
      site="--system-site-packages"
    fi
    "$PYTHON_BIN" -m venv $site "$VENV"
  fi
  pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
  if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
      "${pip[@]}" torch
    else
      # CPU-only machine: never pull the multi-GB CUDA build. Prefer a local CPU wheel (pinned),
      # else PyTorch's CPU index.
      "${pip[@]}" "torch==2.13.0+cpu" 2>/dev/null \
        || "${pip[@]}" torch --index-url https://download.pytorch.org/whl/cpu
    fi
  fi
  spec="$ROOT"
  [ -n "$EXTRAS" ] && spec="$ROOT[$EXTRAS]"
  # The rest through uv where torch is the venv's own (the README's "Dependencies" says why), torch pinned to the
  # one installed so nothing pulls another build; --compile-bytecode as pip does (children started with -B
  # would compile their imports again). pip otherwise.
  pin="$("$VENV/bin/python" -c "import sys, torch; assert torch.__file__.startswith(sys.prefix)
print('torch==' + torch.__version__)" 2>/dev/null)" || pin=""
  if [ -n "$pin" ] && "${pip[@]}" uv 2>/dev/null; then
    echo "$pin" > "$VENV/.torch-pin"
    "$VENV/bin/uv" pip install --quiet --compile-bytecode --python "$VENV/bin/python" \
      --constraint "$VENV/.torch-pin" -e "$spec" || "${pip[@]}" -e "$spec"
  else
    "${pip[@]}" -e "$spec"
  fi
  echo "$want" >> "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export PYTHONUNBUFFERED=1
