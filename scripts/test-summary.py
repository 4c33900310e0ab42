#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print one closing line for a meson test run: 'N passed, N failed, N skipped'."""
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
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
