"""Tiny offline models: ``tiny`` builds a small random model of a supported architecture (for
``tiny:<arch>`` model specs, smoke runs and tests); ``tiny_source`` reads a real tokenizer's
folder and tells its architecture. Nothing here downloads."""

__all__: list[str] = []  # nothing here is for the other rooms
