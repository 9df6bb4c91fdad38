"""stoker on the HF peer's Parquet files, in place (peer_stoker_in_place.py)."""
import peer_stoker_in_place

batches = peer_stoker_in_place.batches_of("stoker_parquet")
