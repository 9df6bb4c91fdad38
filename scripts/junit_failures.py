"""Prints each failed test of JUnit XML files (ctest's or pytest's) with the end of its output.

test.sh calls it last, so that a log read from its end (CI keeps the tail) shows why a test
failed, not only that it did. Usage: junit_failures.py PATH... (missing ones are skipped); a
folder stands for its XML files (GoogleTest's, one per suite: cmake/StokerTestSuites.cmake).
"""

import os
import sys
import xml.etree.ElementTree as ET

LINES = 40  # of each failed test's output


def failures(path):
    """(name, text) of each failed or erroring test case in a JUnit file."""
    for case in ET.parse(path).getroot().iter("testcase"):
        bad = [e for e in case if e.tag in ("failure", "error")]
        if not bad:
            continue
        parts = [(e.get("message") or "") + "\n" + (e.text or "") for e in bad]
        parts += [e.text or "" for e in case if e.tag == "system-out"]
        name, group = case.get("name") or "", case.get("classname") or ""
        if group and group != name:  # ctest repeats the name as the class
            name = group + "." + name
        yield name, "\n".join(p.strip() for p in parts if p.strip())


def files(paths):
    for path in paths:
        if os.path.isdir(path):
            yield from sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".xml"))
        else:
            yield path


def main(paths):
    for path in files(paths):
        if not os.path.exists(path):
            continue
        try:
            found = list(failures(path))
        except ET.ParseError as error:
            print(f"{path}: not JUnit XML: {error}")
            continue
        for name, text in found:
            lines = text.splitlines()
            print(f"== failed: {name} ({path}), its last {min(len(lines), LINES)} lines:")
            for line in lines[-LINES:]:
                print("   " + line)


if __name__ == "__main__":
    main(sys.argv[1:])
