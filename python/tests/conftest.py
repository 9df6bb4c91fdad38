"""Fixtures shared by the suites: the loader's test datasets (loader_datasets.py), the remote
datasets' servers on loopback (servers.py)."""

pytest_plugins = ["loader_datasets", "servers"]
