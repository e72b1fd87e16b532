#!/bin/bash
# Start the stand-in controller in the background on 127.0.0.1 and a free port.
#   start.sh DIR [controller options...]
# DIR gets controller.db, config.json (written here with test keys unless it
# exists), controller.log, port and pid. Prints "port=N pid=P" once it listens.
# Stop it with: kill "$(cat DIR/pid)". Tests that source tests/lib/ call
# controller_start (tests/lib/controller.sh) instead; this is for the others.
set -euo pipefail
dir=${1:?usage: start.sh DIR [controller options...]}
shift
source "$(dirname "$0")/../lib/controller.sh"
controller_launch "$dir" "$@" || exit 1
echo "port=$CTL_PORT pid=$CTL_PID"
