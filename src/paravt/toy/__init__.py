"""A learnable synthetic long-video task that needs ``crop_video``, and its oracle.

- ``task``: constants, ``ToyTaskConfig``, the seed → ``VideoSpec`` rule, question rows;
- ``render``: pixels (numpy) and H.264 encoding (PyAV);
- ``detect``: reading the needle's colour off decoded frames;
- ``generate``: ``make_toy_task(cfg)`` writes videos, rows and ``task.json``;
- ``oracle``: ``ToyOracleBackend``, a scripted policy for the episode engine.

Guide: docs/TOY_TASK.md.
"""

__all__: list[str] = []  # nothing here is for the other rooms
