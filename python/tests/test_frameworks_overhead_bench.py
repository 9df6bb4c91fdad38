"""bench/frameworks_overhead.py end to end on the frameworks' tiny dataset (203 records, two
rounds), fed by the loader and by resident batches, so that the benchmark cannot rot: every loop
is run in every round, and both the images/s and the steady pace are reported with each
framework's ratios to the plain loop. No timing is asserted."""
import pathlib
import re
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "frameworks_overhead.py"
LOOPS = ("plain", "lightning", "accelerate")


@pytest.mark.parametrize("feed", ["loader", "resident"])
def test_two_rounds_measure_every_loop_both_ways(classes, feed):
    done = subprocess.run([sys.executable, SCRIPT, "--data", classes, "--rounds", "2",
                           "--batch-size", "16", "--feed", feed],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    for round_ in range(2):
        line = re.search(rf"^round {round_}: (.*) images/s$", out, re.M)
        assert line, out
        for loop in LOOPS:
            rate, steady = re.search(rf"{loop} (\d+) \((\d+) steady\)", line.group(1)).groups()
            assert int(rate) > 0 and int(steady) > 0, line.group(0)
    sections = out.split("steady pace (the batch over the median step):")
    assert len(sections) == 2 and "images/s of each run:" in sections[0], out
    for section in sections:
        for loop in ("lightning", "accelerate"):
            ratios = re.search(rf"^{loop} +median +\d+ images/s, spread \d+%; of plain "
                               r"\(target >= 0\.95\): ([\d.]+) \(medians\), ([\d.]+) \(by round\)",
                               section, re.M)
            assert ratios and all(float(r) > 0 for r in ratios.groups()), section
