#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print one closing line for a meson test run: 'N passed, N failed, N skipped'.
--fuzz=pass|fail counts the libFuzzer run (scripts/fuzz.sh) as one more test."""
import json
import sys

passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        res = r.get("result")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
for arg in sys.argv[2:]:
    if arg == "--fuzz=pass":
        passed += 1
    elif arg == "--fuzz=fail":
        failed += 1
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
