# Sourced by scripts/serve and scripts/test: create or reuse the virtualenv and install into it.
# Installs only when pyproject.toml changed since the last install (a stamp file per extras set).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LOBUG_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

say() { printf '%s\n' "$*" >&2; }

# pip warns once per package about this machine's unused local index folders; keep real errors.
quiet_pip() { grep -v "^WARNING: Location 'file:" || true; }

ensure_apt() {
  # Debian packages the tests use (speech fixtures, systemd-python build, systemd-analyze).
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    say "note: missing system packages: ${missing[*]} (install them with apt-get as root)"
    return 0
  fi
  say "installing system packages: ${missing[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_venv() {
  local extras="$1"
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtualenv in $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  local stamp="$VENV/.lobug-installed-${extras:-base}"
  local want
  want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
  if [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ]; then
    return 0
  fi
  if [[ ",$extras," == *",local-embed,"* ]]; then
    # The CPU build of torch that is on this machine; a plain `torch` requirement would pull
    # gigabytes of CUDA packages. sentence-transformers then finds it satisfied.
    "$VENV/bin/pip" install -q "torch==2.13.0" 2> >(quiet_pip >&2)
  fi
  say "installing lobug${extras:+[$extras]} into $VENV"
  "$VENV/bin/pip" install -q -e "$ROOT${extras:+[$extras]}" 2> >(quiet_pip >&2)
  echo "$want" >"$stamp"
}
