# For a test server started in a mount namespace of its own (unshare
# --mount): the namespace begins with a copy of every mount there is, those
# of another test's loop devices included, and / is private on these
# machines, so that test's umount does not reach the copy: its loop device
# stays busy (BLKRRPART and mount fail with EBUSY) for as long as the server
# lives. The namespace drops them first:
#   unshare --mount ... /bin/sh -c "$MOUNTNS_DROP_LOOPS; ..."
# lazily unmounts, in the new namespace only, every mount of a /dev/loop*
# device, deepest first.
# shellcheck disable=SC2016
MOUNTNS_DROP_LOOPS='sed -n "s|^[^ ]* [^ ]* [^ ]* [^ ]* \([^ ]*\) .* - [^ ]* /dev/loop.*|\1|p" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l'

# For a command run in a network namespace: ip netns exec makes such a copy
# too, and a daemon a test starts there otherwise holds another test's loop
# partitions open for as long as it lives (a CI run's test-apply-loop could
# not wipe /dev/loop0 while test-bootserver's dnsmasq and nginx ran: "the
# kernel keeps /dev/loop0's old partitions").
#   netns_exec NS CMD...   CMD in NS, in the foreground
#   netns_bg NS CMD...     CMD in NS in the background; NETNS_PID is CMD's
#                          own PID (ip netns exec and sh exec it), to stop it
#                          by; redirect the call to redirect CMD
MOUNTNS_EXEC="$MOUNTNS_DROP_LOOPS"'; exec "$@"'
netns_exec() {
  local ns=$1; shift
  ip netns exec "$ns" /bin/sh -c "$MOUNTNS_EXEC" sh "$@"
}
netns_bg() {
  local ns=$1; shift
  ip netns exec "$ns" /bin/sh -c "$MOUNTNS_EXEC" sh "$@" &
  NETNS_PID=$!
}
