#!/usr/bin/env python3
"""Counts ctest's JUnit reports (ctest --output-junit FILE).

    junit-count.py FILE...   prints "PASSED FAILED SKIPPED" on the first line,
                             then one line per test that did not pass:
                             "failed NAME: why" or "skipped NAME: why"; under
                             a failed test, its own "not ok" lines (TAP, the
                             first 20), so that the run's last lines say which
                             check failed, not only which test

ctest writes status="run" for a pass, "fail" for a failure or time-out,
"disabled" for a DISABLED test, and "notrun" both for a test that exited with
its SKIP_RETURN_CODE (<skipped message="SKIP_RETURN_CODE=77"/>) and for one
that could not start (<skipped message="Unable to find executable"/>). ctest
itself counts the second kind as a failure, and so does this script: only a
test that ran and asked to be skipped is skipped. A missing or unreadable
report is an error (exit 2), never zero tests.
"""
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed = failed = skipped = 0
    lines = []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"junit-count: cannot read '{path}': {e}", file=sys.stderr)
            return 2
        for case in root.iter("testcase"):
            name = case.get("name", "?")
            status = case.get("status", "")
            skip = case.find("skipped")
            why = skip.get("message", "") if skip is not None else ""
            if status == "run":
                passed += 1
            elif status == "disabled":
                skipped += 1
                lines.append(f"skipped {name}: disabled")
            elif status == "notrun" and why.startswith("SKIP_RETURN_CODE="):
                skipped += 1
                out = (case.findtext("system-out") or "").strip().splitlines()
                reason = next((l for l in reversed(out) if "SKIP" in l), why)
                lines.append(f"skipped {name}: {reason.strip()}")
            else:
                failed += 1
                fail = case.find("failure")
                msg = fail.get("message", "") if fail is not None else why
                lines.append(f"failed {name}: {msg or status}")
                out = (case.findtext("system-out") or "").splitlines()
                bad = [l.strip() for l in out if l.lstrip().startswith("not ok")]
                lines.extend(f"  {l}" for l in bad[:20])
                if len(bad) > 20:
                    lines.append(f"  ... and {len(bad) - 20} more")
    print(passed, failed, skipped)
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(64)
    sys.exit(main(sys.argv[1:]))
