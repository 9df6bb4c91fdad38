"""stoker reading the webdataset peer's tars (`stoker.WebDataset`) or the HF peer's Parquet
files (`stoker.Parquet`) in place, without a conversion: the stoker peer's training work
(peer_stoker.train_batches) on the source object instead of a converted dataset. The stores are
the peers' own (run.py: shared with), so this module prepares nothing."""
import glob
import os

import stoker

import peer_stoker


def tar_source(store):
    return stoker.WebDataset(sorted(glob.glob(os.path.join(store, "data-*.tar"))))


def parquet_source(store):
    return stoker.Parquet(sorted(glob.glob(os.path.join(store, "*.parquet"))), image="image",
                          label="label")


SOURCES = {"stoker_tar": tar_source, "stoker_parquet": parquet_source}


def batches_of(peer):
    def batches(store, cores, dtype, seed):
        return peer_stoker.train_batches(SOURCES[peer](store), cores, dtype, seed, fast=False)
    return batches
