#!/bin/bash
# The CI form of the fleet test (tests/fleet/fleet.sh, docs/benchmarks.md
# "A rack at once"): 16 nodes at once against nginx pushing back (2 specs a
# second plus a burst of 2, 4 image downloads at a time at 256 KiB/s, 503
# beyond), 3 image downloads cut half way, and the stand-in controller.
# Asserts every node registered exactly once, every image verified, the
# image bytes nginx served, the retries' spread and the controller's peak
# rate against the bounds derived from agent/net/backoff.h. About 40 s.
set -euo pipefail
: "${KILN:?}" "${SRC:?}"
FLEET_N=${FLEET_N:-16} FLEET_CONN=4 FLEET_SPEC_RATE=2 FLEET_SPEC_BURST=2 FLEET_CUTS=3 \
  FLEET_IMAGE_KIB=1024 FLEET_RATE=256k exec bash "$SRC/tests/fleet/fleet.sh"
