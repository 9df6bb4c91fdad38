#!/usr/bin/env python3
"""The video clip benchmark's chart, drawn as SVG from bench/video_loader.py's
OUT/video-report.json: for the training and the evaluation pipeline, every loader's clips/s per
core and its clips per CPU second, at each core count (peers_report.chart's bars, stoker's
labelled with its ratio to the fastest peer), one panel under the other.

Usage: python3 bench/video_chart.py OUT/video-report.json docs/figures/video-clips-per-core.svg
"""
import json
import re
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/peers")
import peers_report  # noqa: E402

PIPELINES = {"train": "training (random clip, Resize 128, RandomCrop 112, flip)",
             "eval": "evaluation (regular clip, Resize 128, CenterCrop 112)"}
MEASURES = {"clips_per_s": ("clips/s per core", True),
            "clips_per_cpu_s": ("clips per CPU second", False)}


def main(argv):
    with open(argv[0]) as f:
        report = json.load(f)["loaders"]
    keys = sorted({key for entry in report.values() for key in entry.get("median", {})},
                  key=lambda k: int(k.split("c")[0]))
    parts, y, width = [], 0, 0
    for pipeline, what in PIPELINES.items():
        chosen = [k for k in keys if k.endswith("_" + pipeline)]
        for measure, (unit, per_core) in MEASURES.items() if chosen else ():
            svg = peers_report.chart(report, chosen, f"{what}: {unit}", measure, per_core)
            if not svg:
                continue
            w, h = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
            parts.append(svg.replace("<svg ", f'<svg y="{y}" ', 1))
            y, width = y + h + 10, max(width, w)
    with open(argv[1], "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}">\n' +
                "\n".join(parts) + "\n</svg>\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
