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


def eval_table(report):
    lines = ["| peer | evaluation pixels against torchvision's PIL path |", "|---|---|"]
    lines += [f"| {name} | {_eval_cell(peer)} |" for name, peer in report.items()]
    return "\n".join(lines)


def chart(report, key, title):
    """Horizontal bars of images/s per core for `key` (e.g. "1c_float32")."""
    rows = [(name, peer["median"][key]["images_per_s"] / int(key.split("c")[0]))
            for name, peer in report.items() if key in peer.get("median", {})]
    if not rows:
        return ""
    width, bar_h, left = 720, 24, 170
    top = max(rate for _, rate in rows)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{40 + bar_h * len(rows)}" font-family="sans-serif" font-size="13">',
           f'<text x="8" y="20" font-weight="bold">{title}</text>']
    for i, (name, rate) in enumerate(sorted(rows, key=lambda r: -r[1])):
        y = 32 + i * bar_h
        w = (width - left - 90) * rate / top
        eval_ = report[name].get("eval")
        note = f" (mean px diff {eval_['mean_abs_diff']:.2f})" if eval_ and eval_[
            "mean_abs_diff"] is not None else ""
        fill = "#d9541e" if name.startswith("stoker") else "#4c78a8"
        svg += [f'<text x="{left - 6}" y="{y + 16}" text-anchor="end">{name}</text>',
                f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" '
                f'fill="{fill}"/>',
                f'<text x="{left + w + 4:.1f}" y="{y + 16}">{rate:,.0f}{note}</text>']
    return "\n".join(svg + ["</svg>"])


def write(report, machine, cores_list, dtypes, out):
    parts = [f"Machine: {machine['cpus']} CPUs, {machine['uname']}; {machine['date']}."]
    if machine.get("max_side"):
        parts += ["", f"Reduced copies, largest side {machine['max_side']}; evaluation pixels "
                  "against torchvision's PIL path on the original files."]
    for dtype in dtypes:
        parts += ["", f"### {dtype}", "", table(report, cores_list, dtype)]
    parts += ["", "### Evaluation transform (Resize 256 + CenterCrop 224)", "", eval_table(report)]
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(parts) + "\n")
    key = f"{cores_list[0]}c_{dtypes[-1]}"
    with open(os.path.join(out, "chart.svg"), "w") as f:
        f.write(chart(report, key, f"images/s per core, {key.replace('_', ', ')}"))
