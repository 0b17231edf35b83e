"""The engine's contract with the model behind it: the ``Backend`` protocol.

Why one declaration, owned by the engine's room: the engine used to probe a backend with
``getattr`` for the names it might have, so a backend that misspelt one silently ran without it
(pixels in the wrong dtype, frames resized under the wrong rule, episodes in rounds where they
could have advanced alone). Now every member the engine reads is declared here, the optional
capabilities too (``lockstep``, ``agenerate``), ``BackendBase`` gives the defaults of a
message-only backend that has none of them, and ``EpisodeEngine`` refuses an object that lacks a
member, naming it. The backends live above the agent (``paravt.backends`` for inference,
``paravt.rollout`` for the trainer's samplers) and import this module; the agent imports none of
them. The requests and replies themselves, ``GenRequest`` and ``Generation``, are records
(``paravt.schema.episodes``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from paravt.agent.chat import ChatCodec
from paravt.schema.episodes import Generation, GenRequest

__all__ = ["BACKEND_MEMBERS", "Backend", "BackendBase", "check_backend"]

#: the members ``EpisodeEngine`` reads, in the order the protocol declares them
BACKEND_MEMBERS = (
    "codec",
    "pixel_dtype",
    "pixel_device",
    "reads_image_pixels",
    "resize_arch",
    "lockstep",
    "agenerate",
    "generate",
    "keep_episode_state",
    "end_episodes",
)

#: ``Backend.agenerate``'s type: one request, one coroutine
AsyncGenerate = Callable[[GenRequest], Awaitable[Generation]]


@runtime_checkable
class Backend(Protocol):
    """The model behind ``EpisodeEngine``.

    - ``generate(requests)``: one ``Generation`` per request, in order; a failure is a
      ``Generation(error=...)``, never an exception for one bad request;
    - ``codec``: a ``ChatCodec`` when the backend works in token space (it reads
      ``GenRequest.tokens``, a ``TokenPrompt``, and returns generated ``token_ids``), or
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

    Two optional capabilities, declared with a "has none" default in ``BackendBase``:

    - ``lockstep``: truthy when every ``generate`` call is a collective that every rank joins
      the same number of times (the trainer's sharded policy holds its ``Lockstep`` here, a
      collective vLLM generator on several ranks ``True``); falsy (``None``) when each process
      samples alone. Episodes then never advance on their own (``engine.schedule``);
    - ``agenerate``: a coroutine function that generates one request (many in flight at once:
      the openai backend's HTTP lanes, vLLM's async engine, paravt's vLLM server client), or
      ``None`` when the backend has none. ``engine.schedule=auto`` lets episodes advance on their
      own exactly when it is set and there is no lockstep.
    """

    # read-only here, so a backend may declare it narrower (a token sampler's is never None)
    @property
    def codec(self) -> ChatCodec | None: ...

    pixel_dtype: Any
    pixel_device: Any
    reads_image_pixels: bool
    resize_arch: str | None
    lockstep: Any

    @property
    def agenerate(self) -> AsyncGenerate | None: ...

    def generate(self, requests: list[GenRequest]) -> list[Generation]: ...

    def keep_episode_state(self, budget_bytes: int) -> None: ...

    def end_episodes(self, episode_ids: list[str]) -> None: ...


class BackendBase:
    """The defaults of the optional members: message-only, float32 pixels on the CPU, joined
    rows, no size rule, no lockstep, no ``agenerate``. A backend subclasses it and sets what it
    has (``agenerate`` as an ``async def`` method, or a property that may answer ``None``)."""

    codec: ChatCodec | None = None
    pixel_dtype: Any = None
    pixel_device: Any = None
    reads_image_pixels: bool = False
    resize_arch: str | None = None
    lockstep: Any = None
    agenerate: AsyncGenerate | None = None

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
        "(subclass paravt.agent.backend.BackendBase for the defaults)"
    )
