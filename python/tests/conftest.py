"""Fixtures shared by the suites: the loader's test datasets (loader_datasets.py)."""

pytest_plugins = ["loader_datasets"]
