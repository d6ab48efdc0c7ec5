#!/usr/bin/env bash
# The agent's resident memory at the default heartbeat interval (10 s), as its installed command
# runs it (the Node options of main.js's `#!/usr/bin/env -S node ...` line; `--plain` without
# them): the built controller and agent on this machine, VmRSS read from /proc once a second for
# 60 s after the agent enrolled. Run after `npm run build`, as root through test/isolated.sh so
# that ports 9203 and 9204 are its own:
#   bash test/isolated.sh bash test/bench/agent-rss.sh [--plain]
set -eu
cd "$(dirname "$0")/../.."
dir=$(mktemp -d)
opts=$(head -1 dist/apps/vm-host/apps/vm-host/src/main.js | sed -n 's/^#!\/usr\/bin\/env -S node//p')
[ "${1:-}" = --plain ] && opts=''
node dist/apps/fleet/apps/fleet/src/main.js >"$dir/fleet.log" 2>&1 &
fleet=$!
sleep 3
# shellcheck disable=SC2086 # the options are words
VM_FLEET_ENDPOINT=http://127.0.0.1:9203 VM_NODE_ID=rss-node VM_WG_IP=127.0.0.2 \
  VM_DISK_DIR="$dir/disks" VM_ACCEL=tcg node $opts dist/apps/vm-host/apps/vm-host/src/main.js \
  >"$dir/agent.log" 2>&1 &
agent=$!
for _ in $(seq 60); do grep -q enrolled "$dir/agent.log" && break; sleep 1; done
sleep 3
max=0
last=0
for _ in $(seq 60); do
  last=$(awk '/VmRSS/ { print $2 }' "/proc/$agent/status")
  [ "$last" -gt "$max" ] && max=$last
  sleep 1
done
echo "node options:${opts:- (none)}"
echo "agent VmRSS over 60 s at the default interval: last $((last / 1024)) MB, max $((max / 1024)) MB"
# Each still running is ended and waited for, silently: one that already exited is not an error.
for pid in "$agent" "$fleet"; do
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
rm -rf "$dir"
