"""The ``paravt`` command line: thin Click commands over the library (no logic of their own)."""

__all__: list[str] = []  # nothing here is for the other rooms
