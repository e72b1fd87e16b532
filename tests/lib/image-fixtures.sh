# Shared by the image host tests: builds (once per build dir) the small image
# and sets SMALL_DIR, SMALL_SUM.
small_image() {
  SMALL_DIR=$BUILD/test-images
  mkdir -p "$SMALL_DIR"
  exec 9>"$SMALL_DIR/.lock"
  flock 9
  if [[ ! -s $SMALL_DIR/small.manifest || $SRC/initramfs/base-image/build-small.sh -nt $SMALL_DIR/small.manifest ]]; then
    bash "$SRC/initramfs/base-image/build-small.sh" "$SMALL_DIR" >/dev/null
  fi
  flock -u 9
  SMALL_SUM=$(cut -d' ' -f1 "$SMALL_DIR/small.tar.zst.sha256")
}
