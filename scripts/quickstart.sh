#!/bin/sh
# The README's first command: install, build, start a local cluster (a master
# on its own embedded PostgreSQL and one agent), train the Fashion-MNIST MLP
# through `det submit --follow`, print its final validation metrics and where to
# look at it in the web UI, and stop the cluster again (on a terminal, once Enter
# is pressed, so that the web UI can be looked at first).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

BIN="$PWD/build/bin"
RUN="${TMPDIR:-/tmp}/det-quickstart.$$"
mkdir -p "$RUN"
MASTER_PID=""
AGENT_PID=""
stop_cluster() {
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null || true
  [ -n "$MASTER_PID" ] && kill "$MASTER_PID" 2>/dev/null && wait "$MASTER_PID" 2>/dev/null || true
  rm -rf "$RUN"
}
trap stop_cluster EXIT INT TERM

"$BIN/det-node" --role=master --listen=127.0.0.1 --port=0 --http-port=0 \
  --ready-file="$RUN/ready.json" >"$RUN/master.log" 2>&1 &
MASTER_PID=$!
i=0
until [ -s "$RUN/ready.json" ]; do
  if ! kill -0 "$MASTER_PID" 2>/dev/null || [ $i -ge 600 ]; then
    echo "det: the master did not start; its log:" >&2
    cat "$RUN/master.log" >&2
    exit 1
  fi
  i=$((i + 1))
  sleep 0.1
done
PORT=$(sed 's/.*"port": \([0-9]*\).*/\1/' "$RUN/ready.json")
HTTP_PORT=$(sed 's/.*"http_port": \([0-9]*\).*/\1/' "$RUN/ready.json")
export DET_MASTER="http://127.0.0.1:$HTTP_PORT"
echo "det: master at $DET_MASTER (log: $RUN/master.log)"

# The master's first start made the admin password and the agent token here (both 0600).
DATA="${XDG_DATA_HOME:-$HOME/.local/share}/det"
# A cluster of one person: its work runs as the user who started it. (A shared cluster's root agent
# runs each det user's work as that user's own Unix user, who must then reach det's binaries and
# the master's data; this one lives under $HOME, which /root's 0700 closes to other users.)
"$BIN/det-node" --role=agent --master="127.0.0.1:$PORT" --slots=cpu:2 --run-tasks-as=agent-user \
  --agent-token-file="$DATA/agent-token" >"$RUN/agent.log" 2>&1 &
AGENT_PID=$!
DET_PASS="$(cat "$DATA/admin-password")" "$BIN/det" user login admin

echo "det: web UI at $DET_MASTER/ (user admin, password in $DATA/admin-password)"

"$BIN/det" submit examples/fashion-mnist/adaptive.toml --follow
EXP=$("$BIN/det" experiment list --json --sort-by id --desc --limit 1 | sed -n 's/.*"id": "\([0-9]*\)".*/\1/p' | head -n 1)
echo "det: the search's learning curves and hyperparameters: $DET_MASTER/experiments/$EXP"
if [ -t 0 ]; then
  printf "det: press Enter to stop the cluster "
  read -r _
fi
