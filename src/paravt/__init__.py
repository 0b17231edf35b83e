"""paravt: parallel ``crop_video`` tool use for video language models, trained with PARA-GRPO.

The top-level package stays import-light (no torch import here) so that ``paravt --help`` is fast;
each room (``video``, ``tools``, ``agent``, ``rewards``, ``train``, ``data``, ``eval``,
``kernels``) is imported on demand.
"""

__version__ = "0.1.0"

from paravt.errors import ParavtError, UserError  # noqa: E402

__all__ = ["__version__", "ParavtError", "UserError"]
