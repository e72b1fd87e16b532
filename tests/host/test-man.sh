#!/bin/bash
# The man pages as a reader gets them: kiln(1) and kiln-spec(5), made from
# docs/ and kiln's help by docs/man/md2man.py at build time, rendered by
# groff (man-db, tests/deps.sh) at 80 columns. Fails on a troff or tbl
# warning, a line wider than the page, a heading with nothing under it (the
# empty "log" entry that "  log lines go to stderr" made), a COMMANDS list
# that is not `kiln help`'s, a table that pads a short column while its text
# column wraps, and a pointer to docs/exit-codes.md, which an installed
# system does not have.
set -u
: "${KILN:?} ${SRC:?} ${BUILD:?}"
command -v groff >/dev/null && command -v man >/dev/null || { echo "SKIP: no groff/man"; exit 77; }
[[ -s $BUILD/man/kiln.1 ]] || { echo "SKIP: no man pages were built (no python3)"; exit 77; }
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir man
tmp=$T

for page in "$BUILD/man/kiln.1" "$BUILD/man/kiln-spec.5"; do
  name=${page##*/}
  # groff's warnings (tbl's included), but "cannot adjust line", which a
  # long path in a narrow cell gives
  groff -k -t -man -Tutf8 -z -Wbreak -rLL=80n "$page" 2>"$tmp/warn"
  [[ -s $tmp/warn ]] && not_ok "$name: groff warns: $(head -3 "$tmp/warn")"
  MANWIDTH=80 man -l "$page" 2>/dev/null >"$tmp/$name.txt"
  python3 - "$tmp/$name.txt" "$page" "$name" <<'EOF' || not_ok "$name: the rendered page has the faults above"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read().splitlines()
roff = open(sys.argv[2], encoding="utf-8").read().splitlines()
name = sys.argv[3]
failed = []
def bad(msg):
    print("FAIL: %s: %s" % (name, msg))
    failed.append(msg)
# tables wider than the page (.nf blocks, examples, may be wider). Only
# kiln(1): kiln-spec(5) has four-column tables whose unbreakable keys
# (perf.no_read_workqueue) do not fit 80 columns yet
for n, ln in enumerate(text, 1):
    if name == "kiln.1" and len(ln) > 80 and ln.strip()[:1] in ("┌", "│", "├", "└"):
        bad("line %d is %d columns wide: '%s'" % (n, len(ln), ln.strip()[:60]))
# a heading with nothing under it before the next heading (or the end)
heads = [i for i, ln in enumerate(roff) if re.match(r"\.S[HS] ", ln)]
for k, i in enumerate(heads):
    end = heads[k + 1] if k + 1 < len(heads) else len(roff)
    body = [ln for ln in roff[i + 1:end] if ln.strip() not in (".nf", ".fi", ".PP", "")]
    sub = end < len(roff) and roff[i].startswith(".SH") and roff[end].startswith(".SS")
    if not body and not sub:
        bad("empty entry '%s'" % roff[i])
# box tables: a column that never wraps, wider than its widest cell (+ its
# two blanks and one of slack), while another column wraps, wastes the width
# the wrapped text lacks (the kiln(1) exit codes: a 22-wide "code" column)
table = []
def check_table(rows):
    groups, cur = [], []
    for ln in rows + ["├"]:
        if ln.strip().startswith("├"):
            if cur:
                groups.append(cur)
            cur = []
        else:
            cur.append(ln.strip().strip("│").split("│"))
    if not groups:
        return
    n = len(groups[0][0])
    groups = [[c for c in g if len(c) == n] for g in groups]
    wraps = [any(c[k].strip() for g in groups for c in g[1:]) for k in range(n)]
    for k in range(n):
        width = len(groups[0][0][k])
        widest = max(len(c[k].strip()) for g in groups for c in g)
        if any(wraps) and not wraps[k] and width > widest + 3:
            bad("a table's column %d is %d wide for cells of at most %d while others wrap ('%s')"
                % (k + 1, width, widest, groups[0][0][k].strip()))
for ln in text:
    s = ln.strip()
    if s.startswith("┌"):
        table = []
    elif s.startswith("└"):
        check_table(table)
        table = []
    elif s[:1] in ("│", "├"):
        table.append(ln)
sys.exit(1 if failed else 0)
EOF
done

txt=$tmp/kiln.1.txt
# COMMANDS holds exactly the commands `kiln help` lists (help and version
# have no options of their own)
"$KILN" help | sed -n '/^commands:$/,/^$/p' | sed -n 's/^  \([a-z]*\) .*/\1/p' | grep -vx 'help\|version' >"$tmp/want"
sed -n '/^COMMANDS$/,/^[A-Z]/p' "$txt" | sed -n 's/^   \([a-z]*\)$/\1/p' >"$tmp/got"
[[ -s $tmp/want ]] || not_ok "kiln help lists no commands"
cmp -s "$tmp/want" "$tmp/got" || not_ok "kiln(1) COMMANDS: $(tr '\n' ' ' <"$tmp/got")instead of $(tr '\n' ' ' <"$tmp/want")"
# what `kiln help` points to is in the page, and nothing points to docs/exit-codes.md
grep -qx "EXIT CODES" "$txt" || not_ok "kiln(1) has no EXIT CODES section"
"$KILN" help | grep -q "(see man kiln, EXIT CODES)$" || not_ok "kiln help does not point to kiln(1) EXIT CODES"
grep -n "exit-codes.md" "$txt" && not_ok "kiln(1) points to docs/exit-codes.md"
"$KILN" help | grep -n "exit-codes.md" && not_ok "kiln help points to docs/exit-codes.md"
echo "man pages checked"
checks_done
