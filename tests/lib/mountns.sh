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
