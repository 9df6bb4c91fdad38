"""stoker's fast mode (`dct_scaling=True`) on the store of peer_stoker."""
import peer_stoker

prepare = peer_stoker.prepare


def batches(store, cores, dtype, seed):
    return peer_stoker.train_batches(store, cores, dtype, seed, fast=True)


def eval_images(store):
    return peer_stoker.eval_images(store, fast=True)
