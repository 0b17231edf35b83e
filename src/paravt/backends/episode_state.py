"""What a local backend keeps of an episode between its turns: the KV cache and vision features.

Why: an episode is up to four model calls, and each one's prompt is the previous one's prompt plus
that turn's output and the tool turn. Without a kept state every call prefills the whole context
again and runs the vision tower over every frame seen so far (the overview 3-4 times over at the
evaluation protocol). With it, a turn prefills only what is new: the last generated token, the
tool turn's text and its new frames (``backends.cached_decode``).

Two stores, one byte budget (``engine.reuse_cache_mb``):

- ``EpisodeState`` per episode: the keys/values of every token so far, as one compact
  ``[1, heads, tokens, head_dim]`` pair per layer, with the ids and images those tokens are. A
  state is used only when its ids and images are an exact prefix of the next request's (so a
  changed prompt, a re-used episode id or another frame simply miss), and it is taken out of the
  store while its turn runs: a failed turn leaves nothing behind.
- image features per distinct image (``shared_vision.image_key``), shared by the episodes that
  hold the image (the overview of a video in an eval batch, GRPO's generations of one prompt) and
  freed with the last of them. A turn that must prefill in full (its state went over the budget)
  still encodes no image twice.

Past the budget a new state or feature is not kept, and that is logged: the next turn prefills
in full, as without reuse. Nothing is ever evicted from under a running turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpisodeStates"]

logger = logging.getLogger(__name__)


def tensor_bytes(*tensors: Any) -> int:
    return sum(int(t.numel()) * t.element_size() for t in tensors if t is not None)


@dataclass
class EpisodeState:
    """One episode's model state after a turn (see the module docstring)."""

    #: the token ids whose keys/values ``layers`` hold, in order
    ids: list[int]
    #: ``image_key`` of every image those tokens show, in order
    images: list[tuple]
    #: per decoder layer ``(keys, values)``, each ``[1, kv_heads, len(ids), head_dim]``
    layers: list[tuple[Any, Any]]
    #: the images' decoded frames, held so that no other tensor can take their address (and key)
    held: list[Any] = field(default_factory=list, repr=False)

    @property
    def nbytes(self) -> int:
        return sum(tensor_bytes(k, v) for k, v in self.layers)

    def covers(self, ids: list[int], image_keys: list[tuple]) -> bool:
        """Whether this state is a proper prefix of a request with ``ids`` and ``image_keys``."""
        n, m = len(self.ids), len(self.images)
        return n < len(ids) and ids[:n] == self.ids and image_keys[:m] == self.images


@dataclass
class _Features:
    data: Any  # the frame, held so its key stays its own
    pooler: Any  # [tokens, hidden]
    deepstack: list[Any]  # per deepstack layer, [tokens, hidden] (Qwen3-VL; empty otherwise)
    owners: set[str]
    nbytes: int


@dataclass
class ReuseStats:
    """Counters since the backend was built (benchmarks and tests read them)."""

    hits: int = 0  # turns that continued a kept state
    misses: int = 0  # turns prefilled in full (first turn, no state, state did not match)
    over_budget: int = 0  # states or features not kept because of the budget
    prefilled_tokens: int = 0  # tokens run through a prefill forward
    cached_tokens: int = 0  # prompt tokens served from a kept state instead
    encoded_images: int = 0  # images run through the vision tower
    reused_images: int = 0  # images whose kept features served a prefill


class EpisodeStates:
    """The kept states and features of running episodes, under one byte budget."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = int(budget_bytes)
        self._states: dict[str, EpisodeState] = {}
        self._features: dict[tuple, _Features] = {}
        self.feature_type: Any = None  # the vision tower's output class (to rebuild its outputs)
        self.stats = ReuseStats()

    @property
    def used_bytes(self) -> int:
        return sum(s.nbytes for s in self._states.values()) + sum(
            f.nbytes for f in self._features.values()
        )

    def __len__(self) -> int:
        return len(self._states)

    # -- states ----------------------------------------------------------------------------
    def take(self, episode: str, ids: list[int], image_keys: list[tuple]) -> EpisodeState | None:
        """The episode's state if it is a prefix of this request, removed from the store (the
        turn that uses it puts back a longer one); a state that does not match is dropped."""
        state = self._states.pop(episode, None)
        if state is not None and state.covers(ids, image_keys):
            return state
        return None

    def admit(self, episode: str, need: int) -> bool:
        """Whether a state of ``need`` bytes fits the budget now; when not, say so in the log (the
        episode's next turn prefills in full)."""
        if self.used_bytes + need > self.budget_bytes:
            self.stats.over_budget += 1
            logger.info(
                "episode %s: its KV cache (%.1f MB) would take the kept states past "
                "engine.reuse_cache_mb (%.1f of %.1f MB used); its next turn prefills in full",
                episode,
                need / 2**20,
                self.used_bytes / 2**20,
                self.budget_bytes / 2**20,
            )
            return False
        return True

    def put(self, episode: str, state: EpisodeState) -> None:
        """Keep ``state`` (``admit`` said it fits)."""
        self._states[episode] = state

    def has_state(self, episode: str) -> bool:
        return episode in self._states

    def episodes(self) -> list[str]:
        """The episodes that hold a state now."""
        return list(self._states)

    # -- features --------------------------------------------------------------------------
    def features(self, key: tuple) -> tuple[Any, list[Any]] | None:
        f = self._features.get(key)
        return None if f is None else (f.pooler, f.deepstack)

    def keep_features(
        self, key: tuple, data: Any, pooler: Any, deepstack: list[Any], owner: str
    ) -> None:
        """Keep one image's features for ``owner`` (shared with its other holders)."""
        f = self._features.get(key)
        if f is not None:
            f.owners.add(owner)
            return
        need = tensor_bytes(pooler, *deepstack)
        if self.used_bytes + need > self.budget_bytes:
            self.stats.over_budget += 1
            logger.info(
                "episode %s: image features (%.1f MB) not kept, past engine.reuse_cache_mb",
                owner,
                need / 2**20,
            )
            return
        self._features[key] = _Features(data, pooler, list(deepstack), {owner}, need)

    # -- ending ----------------------------------------------------------------------------
    def end(self, episodes: list[str]) -> None:
        """Free what ``episodes`` hold: their states, and features no other episode holds."""
        gone = set(episodes)
        for ep in gone:
            self._states.pop(ep, None)
        for key in [k for k, f in self._features.items() if f.owners & gone]:
            f = self._features[key]
            f.owners -= gone
            if not f.owners:
                del self._features[key]

    def clear(self) -> None:
        self._states.clear()
        self._features.clear()
