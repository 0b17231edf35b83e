"""The ``Backend`` protocol: everything the episode engine reads of the model behind it.

Why one declaration: the engine used to probe a backend with ``getattr`` for five names, so a
backend that misspelt one silently ran without it (pixels in the wrong dtype, frames resized under
the wrong rule). Now every member is declared here, ``BackendBase`` gives the defaults of a
message-only backend, and ``EpisodeEngine`` refuses an object that lacks one, naming it.

This module sits at the agent's level of the layer rule (``MODULE_LEVELS`` in
``tests/test_import_graph.py``): the engine needs only the protocol and its records, while the
backends themselves (``paravt.backends``) sit above the agent, beside the trainer.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from paravt.agent.chat import ChatCodec
from paravt.agent.records import Generation, GenRequest

#: the members ``EpisodeEngine`` reads, in the order the protocol declares them
BACKEND_MEMBERS = (
    "codec",
    "pixel_dtype",
    "pixel_device",
    "reads_image_pixels",
    "resize_arch",
    "generate",
    "keep_episode_state",
    "end_episodes",
)


@runtime_checkable
class Backend(Protocol):
    """The model behind ``EpisodeEngine``.

    - ``generate(requests)``: one ``Generation`` per request, in order; a failure is a
      ``Generation(error=...)``, never an exception for one bad request;
    - ``codec``: a ``ChatCodec`` when the backend works in token space (it reads
      ``GenRequest.prompt_ids`` and ``pixel_values`` and returns generated ``token_ids``), or
      ``None`` when it only takes chat messages (HTTP servers apply the template themselves);
    - ``pixel_dtype`` / ``pixel_device``: the dtype and device the engine builds
      ``pixel_values`` in (``None``: float32, on the CPU);
    - ``reads_image_pixels``: the backend takes each image's own rows (one encoding per distinct
      image), so the engine keeps no joined per-episode copy;
    - ``resize_arch``: for a message-only backend, the size rule its frames are resized under
      (``"qwen3-vl"``, ``"qwen2.5-vl"`` or ``None``); it tells the engine the model family. A
      token-space backend's family is its codec's;
    - ``keep_episode_state(budget_bytes)`` / ``end_episodes(ids)``: the engine says, when it is
      built, how many bytes a backend may keep of its episodes' model state between their turns
      (0: none; ``engine.reuse_cache``), and, as episodes end, that their state can go. A
      backend without such state ignores both.
    """

    codec: ChatCodec | None
    pixel_dtype: Any
    pixel_device: Any
    reads_image_pixels: bool
    resize_arch: str | None

    def generate(self, requests: list[GenRequest]) -> list[Generation]: ...

    def keep_episode_state(self, budget_bytes: int) -> None: ...

    def end_episodes(self, episode_ids: list[str]) -> None: ...


class BackendBase:
    """The defaults of the optional members: message-only, float32 pixels on the CPU, joined
    rows, no size rule. A backend subclasses it and sets what it has."""

    codec: ChatCodec | None = None
    pixel_dtype: Any = None
    pixel_device: Any = None
    reads_image_pixels: bool = False
    resize_arch: str | None = None

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        raise NotImplementedError(f"{type(self).__name__} must define generate(requests)")

    def keep_episode_state(self, budget_bytes: int) -> None:
        """Nothing is kept between turns by default."""

    def end_episodes(self, episode_ids: list[str]) -> None:
        """Nothing to free by default."""


def check_backend(backend: Any) -> Backend:
    """``backend`` itself, or a ``TypeError`` naming the members it lacks."""
    if isinstance(backend, Backend):
        return backend
    missing = [name for name in BACKEND_MEMBERS if not hasattr(backend, name)]
    raise TypeError(
        f"{type(backend).__name__} is not a paravt Backend: it has no {', '.join(missing)} "
        "(subclass paravt.backends.base.BackendBase for the defaults)"
    )
