#!/usr/bin/env python3
"""The video clip benchmark's chart: clips/s per core of every loader at each core count, the
training pipeline above the evaluation one, drawn as SVG from bench/video_loader.py's
OUT/video-report.json (peers_report.chart's bars, stoker's labelled with its ratio to the
fastest peer).

Usage: python3 bench/video_chart.py OUT/video-report.json docs/figures/video-clips-per-core.svg
"""
import json
import re
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/peers")
import peers_report  # noqa: E402

TITLES = {"train": "training clips/s per core (random clip, Resize 128, RandomCrop 112, flip)",
          "eval": "evaluation clips/s per core (regular clip, Resize 128, CenterCrop 112)"}


def main(argv):
    with open(argv[0]) as f:
        result = json.load(f)
    report = result["loaders"]
    keys = sorted({key for entry in report.values() for key in entry.get("median", {})},
                  key=lambda k: (k.split("_")[1] != "train", int(k.split("c")[0])))
    parts, y, width = [], 0, 0
    for pipeline in ("train", "eval"):
        chosen = [k for k in keys if k.endswith("_" + pipeline)]
        svg = peers_report.chart(report, chosen, TITLES[pipeline], unit="clips") if chosen else ""
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
