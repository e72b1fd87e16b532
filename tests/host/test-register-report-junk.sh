#!/bin/bash
# A saved run report with anything but white space after its JSON document
# (a second document, junk, a NUL) is refused by `kiln register --report`:
# exit 7, an error naming the file, the file untouched, nothing sent to the
# controller. White space after the document is fine (write_report ends in a
# newline; the other register tests load it).
source "$(dirname "$0")/register-lib.sh"
start_controller
write_spec "$T/spec.yaml"

n=0
for tail in '{"kiln_report": 1, "run_id": "second"}' 'x' $'\n]' '\0trailing' ' 7'; do
  n=$((n + 1))
  f=$T/report-$n.json
  write_report "$f" 10.0.2.15
  printf "$tail" >>"$f"
  before=$(sha256sum <"$f")
  rc=0; "$KILN" register --report "$f" --spec "$T/spec.yaml" >"$T/log" 2>&1 || rc=$?
  [[ $rc == 7 ]] || { cat "$T/log"; fail "report followed by '$tail': exit $rc, not 7"; }
  grep -qxF "error: run report '$f' has data after its JSON document: refusing it" "$T/log" \
    || { cat "$T/log"; fail "report followed by '$tail': unclear error"; }
  [[ $(sha256sum <"$f") == "$before" ]] || fail "report followed by '$tail' was rewritten"
done
[[ $(controller_sql "SELECT count(*) FROM requests") == 0 ]] || fail "a refused report still reached the controller: $(controller_sql 'SELECT * FROM requests')"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "a host was added"
echo "ok: $n reports with data after the document refused, untouched, nothing sent"
