#!/bin/bash
# The command line around the commands: kiln help COMMAND is that command's
# --help, -v/-q are explained, kiln version names the commit it was built
# from, and cmake --install puts the binary and the man pages (made from
# docs/ at build time) in place.
set -u
: "${KILN:?} ${SRC:?} ${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir cli

for c in validate inventory plan fetch image bench apply boot register; do
  "$KILN" help "$c" >"$T/help" 2>"$T/err"; rc=$?
  ((rc == 0)) || not_ok "kiln help $c: exit $rc"
  [[ -s $T/err ]] && not_ok "kiln help $c: stderr '$(cat "$T/err")'"
  head -1 "$T/help" | grep -q "^usage: kiln $c" || not_ok "kiln help $c: '$(head -1 "$T/help")'"
  "$KILN" "$c" --help >"$T/own" 2>/dev/null
  cmp -s "$T/help" "$T/own" || not_ok "kiln help $c differs from kiln $c --help"
done
for c in fetch image; do       # more than a one-line usage
  (( $("$KILN" help "$c" | wc -l) >= 8 )) || not_ok "kiln help $c: only a usage line"
done
"$KILN" help >"$T/help"
grep -q -- "-v, --verbose" "$T/help" && grep -q -- "-q, --quiet" "$T/help" || not_ok "kiln help does not explain -v/-q"
# kexec is /init's internal finish, which a spec's finish: refuses
# (tests/bad-specs/finish-kexec.yaml): the help must not offer it as one
"$KILN" help | grep -qx "  kexec      boot the installed system kiln boot loaded (run by /init; not a spec finish)" ||
  not_ok "kiln help: kexec line '$("$KILN" help | grep "^  kexec")'"
"$KILN" help kexec | grep -qx "  internal finish, not a value of the spec's finish: (docs/reinstall.md)" ||
  not_ok "kiln help kexec does not say 'kexec' is no spec finish"
"$KILN" help boot | grep -qF "not a value of the spec's finish:" || not_ok "kiln help boot offers 'kexec' as a finish"
"$KILN" help nope >/dev/null 2>"$T/err"; rc=$?
((rc == 64)) && [[ $(cat "$T/err") == "error: unknown command 'nope' (see 'kiln help')" ]] || not_ok "kiln help nope: exit $rc, '$(cat "$T/err")'"

# An argument a command does not take is refused by name, exit 64 (usage),
# never ignored; getopt names an unknown option
refuse() {      # refuse 'EXPECTED STDERR (first line)' ARGS...
  local want=$1; shift
  "$KILN" "$@" >"$T/out" 2>"$T/err"; local rc=$?
  ((rc == 64)) && [[ $(head -1 "$T/err") == "$want" ]] && [[ ! -s $T/out ]] ||
    not_ok "kiln $*: exit $rc, stderr '$(head -1 "$T/err")', stdout '$(head -c 80 "$T/out")'"
}
refuse "error: unexpected argument '--json' (see 'kiln help')" version --json
refuse "error: unexpected argument 'x' (see 'kiln help')" --version x
refuse "error: unexpected argument 'x' (see 'kiln help')" --help x
refuse "error: unexpected argument 'x' (see 'kiln help')" help plan x
refuse "error: unexpected argument 'b.yaml' (see 'kiln apply --help')" apply a.yaml b.yaml
refuse "error: unexpected argument 'b.yaml' (see 'kiln plan --help')" plan a.yaml b.yaml
refuse "error: unexpected argument 'x' (see 'kiln boot --help')" boot x
refuse "error: unexpected argument 'x' (see 'kiln kexec --help')" kexec x
refuse "error: unexpected argument 'x' (see 'kiln register --help')" register x
refuse "error: unexpected argument 'v' (see 'kiln fetch --help')" fetch http://127.0.0.1:9/u v
refuse "error: unexpected argument 'v' (see 'kiln image --help')" image http://127.0.0.1:9/u v
refuse "error: unexpected argument 'b' (see 'kiln bench --help')" bench a b
refuse "error: unexpected argument 'x' (see 'kiln inventory --help')" inventory x
refuse "plan: unrecognized option '--bogus'" plan --bogus x.yaml
refuse "validate: unrecognized option '--bogus'" validate "$SRC/templates/single-disk.yaml" --bogus
refuse "kexec: unrecognized option '--json'" kexec --json

# kiln version: the commit of the source tree it was built from
want=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null)
out=$("$KILN" version)
if [[ -n $want ]]; then
  [[ $out =~ ^kiln\ [0-9.]+\ \(commit\ $want(-dirty)?\)$ ]] || not_ok "kiln version: '$out', commit $want expected"
else
  [[ $out =~ ^kiln\ [0-9.]+\ \(commit\ unknown\)$ ]] || not_ok "kiln version outside git: '$out'"
fi

# cmake --install: the binary and both man pages, which render
cmake --install "$BUILD" --prefix "$T/root" >"$T/install.log" 2>&1 || { not_ok "cmake --install failed:"; cat "$T/install.log"; }
for f in bin/kiln share/man/man1/kiln.1 share/man/man5/kiln-spec.5; do
  [[ -s $T/root/$f ]] || not_ok "cmake --install: no $f"
done
"$T/root/bin/kiln" version | grep -q "^kiln " || not_ok "the installed kiln does not run"
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$T/root/share/man/man5/kiln-spec.5" 2>/dev/null >"$T/spec.txt"
  grep -qE "A +bare +number +is +refused" "$T/spec.txt" || not_ok "kiln-spec(5) lacks docs/spec.md's text"
  MANWIDTH=100 man -l "$T/root/share/man/man1/kiln.1" 2>/dev/null >"$T/kiln.txt"
  grep -qE "usage: +kiln +plan +SPEC" "$T/kiln.txt" || not_ok "kiln(1) lacks kiln help plan"
  grep -qi "bad spec" "$T/kiln.txt" || not_ok "kiln(1) lacks the exit codes"
fi
echo "cli checked"
checks_done
