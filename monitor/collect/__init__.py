"""Collection: plain functions that read a live cluster or server and hand the samples to :mod:`stats`."""
