#!/bin/sh
# scripts/pg_test.sh start|stop DIR
# A throwaway PostgreSQL 15 for ctest fixtures: start creates DIR (removing an old one and its server first), runs
# the server on a unix socket in DIR with durability off, and writes its libpq conninfo (database `postgres`) to
# DIR/conninfo; stop kills the server by its pid and removes DIR.
set -eu
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=5432   # the socket is private to DIR, so a fixed port cannot clash
if [ $# -ne 2 ]; then echo "usage: $0 start|stop DIR" >&2; exit 2; fi
CMD=$1; DIR=$2
if [ "$(id -u)" = 0 ]; then AS="runuser -u postgres --"; else AS=""; fi   # initdb refuses to run as root

# A postmaster that exited stays a zombie until init reaps it, which can take a while; it counts as gone.
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

stop_server() {
  [ -f "$DIR/data/postmaster.pid" ] || return 0
  PID=$(head -n 1 "$DIR/data/postmaster.pid")
  # SIGQUIT is PostgreSQL's immediate shutdown: the postmaster takes its children down before it exits.
  kill -QUIT "$PID" 2>/dev/null || return 0
  for _ in $(seq 200); do alive "$PID" || return 0; sleep 0.02; done
  kill -KILL "$PID" 2>/dev/null || true
}

case "$CMD" in
start)
  stop_server
  rm -rf "$DIR"; mkdir -p "$DIR"; chmod 700 "$DIR"   # the socket is in DIR, and the server trusts whoever reaches it
  if [ -n "$AS" ]; then chown postgres:postgres "$DIR"; fi
  if ! $AS "$PGBIN/initdb" -D "$DIR/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 \
      >"$DIR/initdb.log" 2>&1; then
    echo "initdb failed in $DIR/data:" >&2; tail -n 20 "$DIR/initdb.log" >&2; exit 1
  fi
  if ! $AS "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 -o "-c listen_addresses='' -k '$DIR' -p $PORT \
      -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null; then
    echo "PostgreSQL did not start in $DIR/data:" >&2; tail -n 20 "$DIR/server.log" >&2; exit 1
  fi
  echo "host=$DIR port=$PORT user=postgres dbname=postgres" >"$DIR/conninfo"
  ;;
stop)
  stop_server
  rm -rf "$DIR"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2;;
esac
