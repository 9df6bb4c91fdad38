"""scripts/test_counts.py and junit_failures.py: how scripts/test.sh counts and reports a stage
whose ctest tests are GoogleTest suites (cmake/StokerTestSuites.cmake), each writing its cases'
results to a GoogleTest XML file, in the formats ctest and GoogleTest write them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ctest_junit(cases):
    """ctest's --output-junit of `cases`: (name, status) with status run, fail or notrun."""
    body = "".join(
        f'<testcase name="{name}" classname="{name}" time="1" status="{status}">'
        + ('<failure message="Failed"/>' if status == "fail" else "")
        + f"<system-out>output of {name}</system-out></testcase>"
        for name, status in cases)
    return f'<?xml version="1.0"?><testsuite name="(empty)" tests="{len(cases)}">{body}</testsuite>'


def gtest_xml(suite, passed, failed, skipped):
    """GoogleTest's --gtest_output=xml of one suite."""
    cases = [f'<testcase name="P{i}" classname="{suite}" status="run" result="completed"/>'
             for i in range(passed)]
    cases += [f'<testcase name="F{i}" classname="{suite}" status="run" result="completed">'
              f'<failure message="expected 1, got 2"/></testcase>' for i in range(failed)]
    cases += [f'<testcase name="S{i}" classname="{suite}" status="run" result="skipped">'
              f'<skipped message=""/></testcase>' for i in range(skipped)]
    total = passed + failed + skipped
    return (f'<?xml version="1.0"?><testsuites tests="{total}" failures="{failed}" disabled="0" '
            f'errors="0"><testsuite name="{suite}" tests="{total}" failures="{failed}" '
            f'disabled="0" skipped="{skipped}" errors="0">{"".join(cases)}</testsuite></testsuites>')


def run(script, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)],
                          capture_output=True, text=True, check=True).stdout


def test_suites_count_their_cases_and_a_suite_failing_outside_them_once(tmp_path):
    gtest = tmp_path / "gtest-xml"
    gtest.mkdir()
    (gtest / "store_test.Good.xml").write_text(gtest_xml("Good", 5, 0, 2))
    (gtest / "store_test.Bad.xml").write_text(gtest_xml("Bad", 3, 2, 0))
    (gtest / "store_test.Leaks.xml").write_text(gtest_xml("Leaks", 4, 0, 0))  # ASan at exit
    (gtest / "ops_test.Every_Op.xml").write_text(gtest_xml("Every/Op", 6, 0, 0))
    junit = tmp_path / "ctest-junit.xml"
    junit.write_text(ctest_junit([
        ("store_test.Good", "run"), ("store_test.Bad", "fail"), ("store_test.Leaks", "fail"),
        ("ops_test.Every/Op", "run"),
        ("store_test.Crashed", "fail"),  # died before writing its XML
        ("Package.TorchConfig", "run"), ("Package.Skipped", "notrun")]))
    # passed: 5 + 3 + 4 + 6 + 1 (TorchConfig); failed: 2 + 1 + 1; skipped: 2 + 1
    assert run("test_counts.py", junit, gtest).split() == ["19", "4", "3"]
    # Without the suites' files every ctest test counts as one.
    assert run("test_counts.py", junit).split() == ["3", "3", "1"]
    assert run("test_counts.py", tmp_path / "missing.xml", gtest).split() == ["0", "0", "0"]


def test_the_failures_report_names_each_failed_case_of_a_suites_file(tmp_path):
    gtest = tmp_path / "gtest-xml"
    gtest.mkdir()
    (gtest / "store_test.Bad.xml").write_text(gtest_xml("Bad", 3, 1, 0))
    junit = tmp_path / "ctest-junit.xml"
    junit.write_text(ctest_junit([("store_test.Bad", "fail"), ("store_test.Good", "run")]))
    report = run("junit_failures.py", junit, gtest)
    assert "== failed: store_test.Bad (" in report
    assert "output of store_test.Bad" in report
    assert "== failed: Bad.F0 (" in report and "expected 1, got 2" in report
    assert "Good" not in report and "P0" not in report
