#!/usr/bin/env bash
# Runs a command (the system tier's jest) isolated from this machine, when root:
#   - its own network namespace, only `lo` up: the fixed ports 9203 and 9204 and the 127.0.0.x
#     addresses the specs bind are its own, so a running `npm start`, another test run or
#     anything else listening on the host cannot collide with it, nor it with them;
#   - its own mount namespace with a private tmpfs on /run/netns: the test hosts it makes
#     (test/support/netns.ts) have names no other run can see or delete;
#   - its own PID namespace: when the command ends, every process it left is killed (a catch-all
#     beside the specs' own cleanup and jest's global teardown), and bash, as the namespace's
#     init, reaps the QEMU processes the agents daemonize.
# Not root: runs the command on this machine's network as it is, saying so in one line.
#
# Whatever needs this machine's network (e.g. fetching something) runs before this script, in
# the npm script that calls it: inside, there is no route out.
#
#   bash test/isolated.sh jest --selectProjects system --runInBand [files...]
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: bash test/isolated.sh <command> [args...]" >&2
  exit 2
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "test/isolated.sh: not root, so not isolated: running on this machine's network (ports 9203 and 9204 must be free)" >&2
  exec "$@"
fi

# Not exec: bash stays PID 1 of the namespace, reaping orphans until the command ends.
exec unshare --net --mount --propagation private --pid --fork --kill-child --mount-proc \
  bash -c '
    set -eu
    ip link set lo up
    mkdir -p /run/netns
    mount -t tmpfs -o mode=0755 tmpfs /run/netns
    status=0
    "$@" || status=$?
    exit "$status"
  ' isolated "$@"
