"""The ``paravt`` command line: thin Click commands over the library (no logic of their own)."""
