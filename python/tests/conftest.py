"""Fixtures shared by the suites: the loader's test datasets (loader_datasets.py), the remote
datasets' servers on loopback (servers.py) and the fault proxy in front of them
(fault_proxies.py), the COCO-shaped set (coco_sets.py)."""

pytest_plugins = ["loader_datasets", "servers", "fault_proxies", "coco_sets"]
