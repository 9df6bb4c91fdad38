"""Fixtures shared by the suites: the loader's test datasets (loader_datasets.py), the remote
datasets' servers on loopback (servers.py) and the fault proxy in front of them
(fault_proxies.py)."""

pytest_plugins = ["loader_datasets", "servers", "fault_proxies"]
