"""The side-by-side benchmark's table (Markdown) and chart (SVG) from run.py's report."""
import os


def _cell(median, key, scale=1.0, digits=0):
    if not median or key not in median:
        return "-"
    return f"{median[key] * scale:,.{digits}f}"


def _eval_cell(peer):
    e = peer.get("eval")
    if not e:
        return peer.get("eval_error", "-")
    text = (f"{e['files_differing']}/{e['files']} off, mean {e['mean_abs_diff']:.3f}, "
            f"worst {e['worst_abs_diff']}")
    if e["failures"]:
        names = ", ".join(os.path.basename(f) for f in list(e["failures"])[:3])
        text += f"; failed on {len(e['failures'])} ({names})"
    return text


def table(report, cores_list, dtype):
    head = (["peer"] + [f"images/s, {c} core{'s' if c > 1 else ''}" for c in cores_list] +
            ["CPU ms/image (1 core)", "peak RSS MB (1 core)", "first batch s (1 core)",
             "on disk MB"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, peer in report.items():
        medians = peer.get("median", {})
        one = medians.get(f"{cores_list[0]}c_{dtype}")
        row = [f"{name} ({peer['what']})"]
        row += [_cell(medians.get(f"{c}c_{dtype}"), "images_per_s") for c in cores_list]
        row += [_cell(one, "cpu_s_per_image", 1000, 2), _cell(one, "peak_rss_bytes", 2 ** -20),
                _cell(one, "first_batch_s", 1, 2),
                f"{peer['disk_bytes'] / 2 ** 20:,.0f}" if "disk_bytes" in peer else "-"]
        errors = [peer["error"]] if "error" in peer else []
        errors += [f"{k}: {v}" for k, v in peer.get("run_errors", {}).items()
                   if k.endswith(dtype)]
        if errors:
            row[0] += " — " + "; ".join(errors)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def fastest_peer(report, key, measure="images_per_s"):
    """(name, its `measure`) of the fastest peer other than stoker's rows for `key`, or None."""
    rates = [(peer["median"][key][measure], name) for name, peer in report.items()
             if not name.startswith("stoker") and key in peer.get("median", {})]
    return max(rates)[::-1] if rates else None


def recipe_table(report, cores_list, dtype):
    """A recipe's or detection work's table: images/s per core and the ratio to the fastest
    peer at each core count, then the 1-core costs; a peer's note (stoker's steps in Python)
    after it."""
    head = ([f"images/s per core, {c} core{'s' if c > 1 else ''}" for c in cores_list] +
            [f"× fastest peer, {c}c" for c in cores_list] +
            ["CPU ms/image (1 core)", "peak RSS MB (1 core)", "first batch s (1 core)"])
    lines = ["| peer | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    fastest = {c: fastest_peer(report, f"{c}c_{dtype}") for c in cores_list}
    for name, peer in report.items():
        medians = peer.get("median", {})
        one = medians.get(f"{cores_list[0]}c_{dtype}")
        row = [f"{name} ({peer['what']})"]
        for c in cores_list:
            m = medians.get(f"{c}c_{dtype}")
            row.append(_cell(m, "images_per_s", 1 / c))
        for c in cores_list:
            m = medians.get(f"{c}c_{dtype}")
            row.append(f"{m['images_per_s'] / fastest[c][1]:.2f}" if m and fastest[c] else "-")
        row += [_cell(one, "cpu_s_per_image", 1000, 2), _cell(one, "peak_rss_bytes", 2 ** -20),
                _cell(one, "first_batch_s", 1, 2)]
        notes = [peer["note"]] if "note" in peer else []
        notes += [peer["error"]] if "error" in peer else []
        notes += [f"{k}: {v}" for k, v in peer.get("run_errors", {}).items()]
        if notes:
            row[0] += " — " + "; ".join(notes)
        lines.append("| " + " | ".join(row) + " |")
    summary = [f"{c} core{'s' if c > 1 else ''}: {fastest[c][0]}" for c in cores_list
               if fastest[c]]
    if summary:
        lines += ["", "Fastest peer (stoker's rows aside): " + "; ".join(summary) + "."]
    return "\n".join(lines)


def eval_table(report):
    lines = ["| peer | evaluation pixels against torchvision's PIL path |", "|---|---|"]
    lines += [f"| {name} | {_eval_cell(peer)} |" for name, peer in report.items()]
    return "\n".join(lines)


def _cores(key):
    return int(key.split("c")[0])


def chart(report, keys, title, measure="images_per_s", per_core=True):
    """Horizontal bars of a rate of the medians (`measure`), per core where `per_core`, one per
    key of `keys` (e.g. "1c_float32") for each peer, peers ordered by the first key; with several
    keys each bar names its key and stoker's the ratio to the fastest peer."""
    def rate(name, key):
        return report[name]["median"][key][measure] / (_cores(key) if per_core else 1)

    names = sorted((name for name, peer in report.items() if keys[0] in peer.get("median", {})),
                   key=lambda name: -rate(name, keys[0]))
    rows = [(name, key, rate(name, key)) for name in names for key in keys
            if key in report[name]["median"]]
    if not rows:
        return ""
    bar_h, left = 24, 170
    gap = bar_h // 2 if len(keys) > 1 else 0
    width = 820 if gap else 720
    top = max(rate for _, _, rate in rows)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{40 + bar_h * len(rows) + gap * len(names)}" font-family="sans-serif" '
           f'font-size="13">', f'<text x="8" y="20" font-weight="bold">{title}</text>']
    y = 32 - gap
    for i, (name, key, rate) in enumerate(rows):
        first = i == 0 or rows[i - 1][0] != name
        y += gap if first else 0
        w = (width - left - (250 if gap else 90)) * rate / top
        eval_ = report[name].get("eval")
        note = f" (mean px diff {eval_['mean_abs_diff']:.2f})" if eval_ and eval_[
            "mean_abs_diff"] is not None else ""
        if len(keys) > 1:
            label = key.split("_")[0].replace("c", " core" + ("s" if key[0] != "1" else ""))
            fastest = fastest_peer(report, key, measure)
            if name.startswith("stoker") and fastest:
                ours = report[name]["median"][key][measure]
                label += f", {ours / fastest[1]:.1f}× fastest peer"
            note += f" ({label})"
        fill = "#d9541e" if name.startswith("stoker") else "#4c78a8"
        if first:
            svg.append(f'<text x="{left - 6}" y="{y + 16}" text-anchor="end">{name}</text>')
        fill += '" fill-opacity="0.6' if key != keys[0] else ""
        svg += [f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" '
                f'fill="{fill}"/>',
                f'<text x="{left + w + 4:.1f}" y="{y + 16}">'
                f'{rate:,.{int(rate < 100)}f}{note}</text>']
        y += bar_h
    return "\n".join(svg + ["</svg>"])


def write(report, machine, cores_list, dtypes, out, suffix=""):
    """table{suffix}.md and chart{suffix}.svg in `out`; a recipe or detection work
    (machine["work"]) gets
    its own table and a chart of every core count."""
    parts = [f"Machine: {machine['cpus']} CPUs, {machine['uname']}; {machine['date']}."]
    work = machine.get("work", "textbook")
    if machine.get("max_side"):
        parts += ["", f"Reduced copies, largest side {machine['max_side']}; evaluation pixels "
                  "against torchvision's PIL path on the original files."]
    if work != "textbook":
        defined_in = machine.get("defined_in", "recipes.py")
        parts += ["", f"### Work {work} ({dtypes[0]}, bench/peers/{defined_in})", "",
                  recipe_table(report, cores_list, dtypes[0])]
        keys = [f"{c}c_{dtypes[0]}" for c in cores_list]
        title = f"{work}: images/s per core, {dtypes[0]}"
    else:
        for dtype in dtypes:
            parts += ["", f"### {dtype}", "", table(report, cores_list, dtype)]
        parts += ["", "### Evaluation transform (Resize 256 + CenterCrop 224)", "",
                  eval_table(report)]
        keys = [f"{cores_list[0]}c_{dtypes[-1]}"]
        title = f"images/s per core, {keys[0].replace('_', ', ')}"
    with open(os.path.join(out, f"table{suffix}.md"), "w") as f:
        f.write("\n".join(parts) + "\n")
    with open(os.path.join(out, f"chart{suffix}.svg"), "w") as f:
        f.write(chart(report, keys, title))
