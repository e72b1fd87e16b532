# Shared by the image host tests (sourced, not a test):
#   small_image          builds (once per build dir) the small image and sets
#                        SMALL_DIR, SMALL_SUM
#   small_image_served   small_image, copied into $T/www and served there by
#                        nginx (http_start of tests/lib/http.sh: HTTP_PORT)
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

small_image_served() {
  small_image
  mkdir -p "$T/www"
  cp "$SMALL_DIR/small.tar.zst" "$T/www/"
  http_start "$T/www"
}
