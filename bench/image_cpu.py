#!/usr/bin/env python3
"""CPU per training image of `stoker bench loader --workers 0`, and where it goes.

  .venv/bin/python bench/image_cpu.py --data DATASET [--stoker build/stoker] [--flags "..."]
        [--baseline OTHER/stoker [--baseline-data DATASET2] [--baseline-flags "..."]]
        [--pairs 5] [--workers N] [--profile]

Time: user+sys seconds of `STOKER bench loader --data DATASET --batch 64 --workers 0 --epochs 1
--min-seconds 0 --json FLAGS`, less the process start (user+sys of `STOKER bench loader --help`,
LibTorch's load included), over the images made (the loader and its bare loop each make every
sample once). With --baseline, the two binaries run alternately, --pairs times each, and the
median of each and their ratio are printed (the machine's noise hits both alike). --workers N
(N > 0) measures images/s of the loader with N workers instead (the JSON's samples_per_s).

--profile: `perf record` (Debian's linux-perf) of one run, its samples split into the stages of
an image's path by symbol (self time): libjpeg's header parse and setup, Huffman decoding,
inverse DCT, upsampling + colour conversion; stoker's fused resample + flip + normalise + CHW
write; memory (malloc/free, page faults, copies); record read + checksum; the rest. Each stage
is printed as its share and its ms per image (share x the run's CPU per image, start included).
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile


def cpu_of(cmd):
    """User+sys seconds of running cmd (its children), and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def loader_cmd(stoker, data, flags, workers=0):
    return [stoker, "bench", "loader", "--data", data, "--batch", "64", "--workers", str(workers),
            "--epochs", "1", "--min-seconds", "0", "--json", *flags]


def images_per_s(stoker, data, flags, workers):
    _, out = cpu_of(loader_cmd(stoker, data, flags, workers) + ["--min-seconds", "3"])
    return json.loads(out)["samples_per_s"]


def ms_per_image(stoker, data, flags):
    start, _ = cpu_of([stoker, "bench", "loader", "--help"])
    cpu, out = cpu_of(loader_cmd(stoker, data, flags))
    r = json.loads(out)
    images = 2 * r["samples"]  # the loader's and the bare loop's
    return 1e3 * (cpu - start) / images, 1e3 * cpu / images, 1e3 * start


# (stage, regular expression over "dso symbol"), first match wins.
# Stripped libraries (Debian's libjpeg-turbo has no symbols without its -dbgsym package) show
# as addresses, which fall into "other": the by-library split says how much that is.
STAGES = [
    ("Huffman decode", r"decode_mcu|huff|fill_bit_buffer|process_restart"),
    ("inverse DCT", r"idct|decompress_onepass|decompress_data|jzero"),
    ("upsampling + colour conversion",
     r"upsample|ycc_rgb|gray_rgb|rgb_rgb|color|cmyk|merged|sep_|null_convert|h2v"),
    ("libjpeg header parse + setup", r"libjpeg.* (get_|read_markers|jinit|jpeg_|alloc_|"
                                     r"free_pool|start_|next_marker|skip_|first_marker|"
                                     r"prepare_|master|per_scan|latch|reset_|output_pass|"
                                     r"finish_|examine|set_|init_|consume|read_restart|"
                                     r"use_merged|default_decompress|jround|jdiv|"
                                     r"realize|access|process_data)"),
    ("resample + flip + normalise + CHW (fused)", r"[Rr]esampl|hwy|N_AVX|N_SSE|HWY|kernel"),
    ("restart window (marker scan + copy)", r"seek_restart|next_marker|libc.*memchr"),
    ("record read + checksum", r"xxh|XXH|crc|verify|checksum|read_record|resolve"),
    ("memory (malloc/free, page faults, copies)",
     r"malloc|free|_int_|mmap|munmap|brk|page|fault|clear_|memset|memcpy|memmove|"
     r"\[kernel|kernel\.kallsyms"),
]


def profile(stoker, data, flags):
    with tempfile.TemporaryDirectory() as tmp:
        perf_data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "2999", "-o", perf_data, "--",
                        *loader_cmd(stoker, data, flags)],
                       check=True, stdout=subprocess.DEVNULL)
        report = subprocess.run(
            ["perf", "report", "-i", perf_data, "--stdio", "--no-children", "--sort", "dso,sym",
             "-F", "overhead,dso,sym"], check=True, stdout=subprocess.PIPE, text=True,
            stderr=subprocess.DEVNULL).stdout
    shares = {name: 0.0 for name, _ in STAGES}
    shares["other"] = 0.0
    others = []
    dsos = {}
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)", line)
        if not m:
            continue
        share, what = float(m.group(1)), f"{m.group(2)} {m.group(3).strip()}"
        dsos[m.group(2)] = dsos.get(m.group(2), 0.0) + share
        for name, pattern in STAGES:
            if re.search(pattern, what):
                shares[name] += share
                break
        else:
            shares["other"] += share
            others.append((share, what))
    return shares, sorted(others, reverse=True)[:8], sorted(dsos.items(), key=lambda d: -d[1])[:8]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--stoker", default="build/stoker")
    p.add_argument("--baseline", help="another stoker binary to alternate with")
    p.add_argument("--baseline-flags", default="", help="its flags (default: none)")
    p.add_argument("--baseline-data", help="its dataset (default: --data)")
    p.add_argument("--workers", type=int, default=0, help="> 0: images/s with this many workers")
    p.add_argument("--flags", default="", help="flags for --stoker's runs")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    flags = a.flags.split()
    if a.profile:
        _, total, start = ms_per_image(a.stoker, a.data, flags)
        shares, others, dsos = profile(a.stoker, a.data, flags)
        print(f"{a.stoker} {a.flags}: {total:.3f} ms CPU per image, process start included "
              f"(start {start:.0f} ms)")
        print("| stage | share | ms per image |\n|---|---:|---:|")
        for name, share in shares.items():
            print(f"| {name} | {share:.1f}% | {share / 100 * total:.3f} |")
        print("largest 'other' symbols:", "; ".join(f"{s:.1f}% {w}" for s, w in others))
        print("by library:", "; ".join(f"{d} {s:.1f}% ({s / 100 * total:.3f} ms)" for d, s in dsos))
        return
    runs = {"new": [], "base": []}
    for i in range(a.pairs):
        order = [("new", a.stoker, a.data, flags)]
        if a.baseline:
            order.append(("base", a.baseline, a.baseline_data or a.data, a.baseline_flags.split()))
        if i % 2:
            order.reverse()
        for key, binary, data, f in order:
            x = (images_per_s(binary, data, f, a.workers) if a.workers > 0
                 else ms_per_image(binary, data, f)[0])
            runs[key].append(x)
            print(f"pair {i + 1}: {key} {x:.3f}", file=sys.stderr, flush=True)
    unit = f"images/s with {a.workers} workers" if a.workers > 0 else "ms CPU per image"
    new = statistics.median(runs["new"])
    print(f"{a.stoker} {a.flags}: median {new:.3f} {unit} (runs: "
          f"{', '.join(f'{x:.3f}' for x in runs['new'])})")
    if a.baseline:
        base = statistics.median(runs["base"])
        print(f"{a.baseline} {a.baseline_flags}: median {base:.3f} (runs: "
              f"{', '.join(f'{x:.3f}' for x in runs['base'])})")
        print(f"ratio {new / base:.3f}")


if __name__ == "__main__":
    main()
