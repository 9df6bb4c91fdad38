"""A process and its descendants, from /proc: what the benchmark charges a peer for (its
DataLoader worker processes included)."""
import os


def _stats():
    """{pid: the fields of /proc/pid/stat after the command name}."""
    stats = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stats[int(pid)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
    return stats


def _tree(root, stats):
    children = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return [stats[pid] for pid in tree if pid in stats]


def cpu_seconds(root):
    """User + system CPU seconds of `root`, its reaped children and its live descendants."""
    ticks = sum(sum(int(v) for v in fields[11:15]) for fields in _tree(root, _stats()))
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_bytes(root):
    """Resident bytes of `root` and its descendants."""
    pages = sum(int(fields[21]) for fields in _tree(root, _stats()))
    return pages * os.sysconf("SC_PAGE_SIZE")
