"""Fixtures shared by the suites: the loader's test datasets (loader_datasets.py), the remote
datasets' servers on loopback (servers.py) and the fault proxy in front of them
(fault_proxies.py), the COCO-shaped set (coco_sets.py).

Python's own Ctrl-C handler, whatever the suite was started from: a shell script's background
job (`bash scripts/test.sh &`) inherits SIGINT ignored, which Python then leaves ignored, and
the Ctrl-C tests would fail; the processes they start inherit an ignored signal, not a handler."""

import signal

signal.signal(signal.SIGINT, signal.default_int_handler)

pytest_plugins = ["loader_datasets", "servers", "fault_proxies", "coco_sets"]
