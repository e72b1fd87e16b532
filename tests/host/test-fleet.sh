#!/bin/bash
# The CI form of the fleet test (tests/fleet/fleet.sh, docs/benchmarks.md
# "A rack at once"): 16 nodes at once against nginx pushing back (2 specs a
# second plus a burst of 2, 4 image downloads at a time at 256 KiB/s, 503
# beyond), 3 image downloads cut half way, and the stand-in controller.
# The nodes are the mix of fleet.sh (MIX: recorded and generated boxes
# against one rack spec, 20% of them fitting no layout). Asserts every node
# got the layout its box must get, every box that fits none enlisted with its
# reasons, every fitting node registered exactly once, every image verified, the
# image bytes nginx served, the retries' spread and the controller's peak
# rate against the bounds derived from agent/net/backoff.h, and issue 27's
# two bounds in the form 16 nodes can hold them (the 100-node run holds
# them as the issue states them: fewer than 20% of N retrying in any one
# second, wall time within 1.2x of node 0's time x N / slots):
#   - peak: 20% of 16 is 3.2 nodes, below what independent jitter can
#     promise: with push-back's 16 s window the nodes retrying in one second
#     are at most Binomial(16, 1/16), which passes 7 with probability under
#     1e-5; so under half of N (8);
#   - wall: 1.2x the reference, plus two push-back delays (2 x (1 s + 16 s)):
#     20% of a 16-node reference (about 5-8 s) is less than one window, and
#     the last node may wait one at the spec (2 a second) and one at the
#     image (4 slots) after a slot frees (one delay's slack failed a CI run:
#     27.6 s against 26.1).
# About 65 s in the suite (ctest -j2; it was about 40 s with the 4 s window and a 1 MiB image).
set -euo pipefail
: "${KILN:?}" "${SRC:?}"
FLEET_N=${FLEET_N:-16} FLEET_CONN=4 FLEET_SPEC_RATE=2 FLEET_SPEC_BURST=2 FLEET_CUTS=3 \
  FLEET_IMAGE_KIB=512 FLEET_RATE=256k FLEET_PEAK_SHARE=0.5 FLEET_WALL_RATIO=1.2 FLEET_WALL_SLACK=34 \
  exec bash "$SRC/tests/fleet/fleet.sh"
