"""The keywords by which stoker.Loader and the tools read a dataset in S3 or behind HTTP:
cache_dir=, cache_gb=, cache_policy= (the command line's --cache-dir, --cache-gb,
--cache-policy; docs/REMOTE-DESIGN.md section 3)."""
import os


def data_access(cache_dir, cache_gb, cache_policy):
    """The keywords cache_dir=, cache_gb=, cache_policy= as the native calls take them (None:
    the defaults); TypeError or ValueError in one line for a bad one."""
    if cache_dir is not None:
        cache_dir = os.fsdecode(cache_dir)
    if cache_gb is not None:
        if isinstance(cache_gb, bool) or not isinstance(cache_gb, (int, float)):
            raise TypeError(f"cache_gb must be a number, not {type(cache_gb).__name__}")
        if not cache_gb > 0 or cache_gb == float("inf"):
            raise ValueError(f"cache_gb must be a number of GB above 0, not {cache_gb!r}")
    if not isinstance(cache_policy, str):
        raise TypeError(f"cache_policy must be a str, not {type(cache_policy).__name__}")
    return {"cache_dir": cache_dir or "", "cache_gb": float(cache_gb or 0),
            "cache_policy": cache_policy}
