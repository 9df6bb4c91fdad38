"""Counts a stage's tests for scripts/test.sh: prints `PASSED FAILED SKIPPED`.

Usage: test_counts.py JUNIT [GTEST_XML_DIR]

JUNIT is ctest's or pytest's JUnit XML (missing: nothing ran). A ctest test that runs a
GoogleTest suite (cmake/StokerTestSuites.cmake) wrote its cases' results to
GTEST_XML_DIR/NAME.xml ('/' of NAME as '_'): its cases are counted, and a failed suite none of
whose cases failed (a crash, a sanitizer's report at exit, a timeout) counts one failure more.
Any other test case counts as one.
"""

import os
import sys
import xml.etree.ElementTree as ET


def outcome(case):
    """'failed', 'skipped' or 'passed': a JUnit test case's, ctest's or pytest's."""
    tags = {child.tag for child in case}
    if tags & {"failure", "error"} or case.get("status") == "fail":
        return "failed"
    if "skipped" in tags or case.get("status") in ("notrun", "disabled"):
        return "skipped"
    return "passed"


def suite_counts(path):
    """(cases, failed, skipped) of a GoogleTest XML file, or None when it is missing or cut."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    count = lambda name: int(root.get(name) or 0)
    skipped = sum(int(s.get("skipped") or 0) for s in root.iter("testsuite"))
    return count("tests"), count("failures") + count("errors"), skipped + count("disabled")


def counts(junit, gtest_dir):
    passed = failed = skipped = 0
    if not os.path.exists(junit):
        return passed, failed, skipped
    for case in ET.parse(junit).getroot().iter("testcase"):
        result = outcome(case)
        name = case.get("name") or ""
        suite = None
        if gtest_dir:
            suite = suite_counts(os.path.join(gtest_dir, name.replace("/", "_") + ".xml"))
        if suite is None:
            passed += result == "passed"
            failed += result == "failed"
            skipped += result == "skipped"
            continue
        cases, bad, skips = suite
        passed += max(cases - bad - skips, 0)
        failed += bad + (result == "failed" and bad == 0)
        skipped += skips
    return passed, failed, skipped


if __name__ == "__main__":
    print(*counts(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
