"""stoker on the webdataset peer's tars, in place (peer_stoker_in_place.py)."""
import peer_stoker_in_place

batches = peer_stoker_in_place.batches_of("stoker_tar")
