"""Scoring open-ended answers (MMVU): a rule-based default and an optional judge model.

``RuleJudge`` needs nothing but text: a prediction is correct when, after normalisation
(lower case, punctuation and articles dropped), it equals the reference or contains it as a
whole-word phrase; the token F1 is reported beside it. ``HttpJudge`` asks any OpenAI-compatible
chat endpoint (a local vLLM/SGLang server or a hosted API) whether the prediction matches the
reference, greedily and with a one-word verdict; its endpoint and model are recorded in the
summary. It asks through the ``openai`` SDK's ``AsyncOpenAI`` (retries with backoff and
``Retry-After``, a timeout per attempt: ``retries``, ``timeout_s``), on an event loop of its own
thread (``paravt.backends.http.LoopThread``), so the scorer's synchronous ``judge`` call waits for
one coroutine. When the judge cannot be reached or answers off-format (asked again up to
``retries`` times), the rule decides that sample and the failure is counted (``judged_by:
rule-fallback``) — a judge outage never scores a sample as correct.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from paravt.backends.http import LoopThread
from paravt.rewards import answer_text, oe_tokens, offers_alternatives, overlap_f1

__all__ = ["make_judge"]


def _hedged(prediction: str, reference: str) -> bool:
    """An answer that offers alternatives in words (``red or blue``, ``red/blue``, ``red, maybe
    blue``) when the reference does not. Narrower than the training reward's one-phrase rule
    (docs/ANSWERS.md, "Evaluation"): MMVU's protocol credits a reference stated with extra
    correct detail (``he opens the door and sits down`` for ``he opens the door``)."""
    return offers_alternatives(answer_text(prediction)) and not offers_alternatives(reference)


def token_f1(prediction: str, reference: str) -> float:
    """Token F1 over token multisets (``oe_tokens``, SQuAD's counting); a hedge scores 0."""
    if _hedged(prediction, reference):
        return 0.0
    return float(overlap_f1(oe_tokens(answer_text(prediction)), oe_tokens(str(reference))))


def rule_match(prediction: str, reference: str) -> bool:
    """Normalised equality or whole-phrase containment; a hedge (``red or blue`` for ``red``)
    contains the reference but is no answer."""
    if _hedged(prediction, reference):
        return False
    p, r = oe_tokens(str(prediction)), oe_tokens(str(reference))
    if not r or not p:
        return False
    if p == r:
        return True
    n = len(r)
    return any(p[i : i + n] == r for i in range(len(p) - n + 1))


class RuleJudge:
    name = "rule"

    def describe(self) -> dict:
        return {"kind": "rule", "rule": "normalised equality or whole-phrase containment"}

    def judge(self, question: str, reference: str, prediction: str) -> dict:
        return {
            "correct": float(rule_match(prediction, reference)),
            "f1": token_f1(prediction, reference),
            "judged_by": "rule",
        }


_JUDGE_SYSTEM = (
    "You grade answers to questions about videos. You are given a question, the reference "
    "answer and a candidate answer. Decide whether the candidate states the same thing as the "
    "reference (wording may differ; extra correct detail is fine; a contradiction or a different "
    "value is not). Reply with one word: CORRECT or INCORRECT."
)


@dataclass
class HttpJudge:
    """A judge model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    retries: int = 2

    name = "http"

    def describe(self) -> dict:
        return {
            "kind": "openai-compatible",
            "base_url": self.base_url,
            "model": self.model,
            "system_prompt": _JUDGE_SYSTEM,
            "temperature": 0.0,
        }

    _runner: LoopThread | None = field(default=None, init=False, repr=False, compare=False)
    _sdk: Any = field(default=None, init=False, repr=False, compare=False)  # openai.AsyncOpenAI

    def _base(self) -> str:
        """The endpoint's ``/v1`` (a full ``.../chat/completions`` URL is taken too)."""
        base = self.base_url.rstrip("/").removesuffix("/chat/completions")
        return base if base.endswith("/v1") else base + "/v1"

    def _client(self, openai: Any) -> Any:
        if self._sdk is None:
            self._sdk = openai.AsyncOpenAI(
                base_url=self._base(),
                api_key=self.api_key or "EMPTY",
                max_retries=self.retries,
                timeout=self.timeout_s,
            )
        return self._sdk

    async def _ask_async(self, question: str, reference: str, prediction: str) -> str:
        # the SDK's imports take 1.7 s: only a run that asks a judge pays them, not every
        # command that reads this module (the CLI's start, a mistyped --model)
        import openai

        try:
            reply = await self._client(openai).chat.completions.create(
                model=self.model,
                temperature=0.0,
                max_tokens=8,
                messages=[
                    {"role": "system", "content": _JUDGE_SYSTEM},
                    {
                        "role": "user",
                        "content": f"Question: {question}\nReference answer: {reference}\n"
                        f"Candidate answer: {prediction}\nVerdict:",
                    },
                ],
            )
        except openai.APIError as e:  # the SDK already retried it: the rule decides
            raise _Unanswered(_api_error(e)) from e
        return str(reply.choices[0].message.content or "")

    def _ask(self, question: str, reference: str, prediction: str) -> str:
        if self._runner is None:
            self._runner = LoopThread("paravt-judge")
        return self._runner.run(self._ask_async(question, reference, prediction))

    def judge(self, question: str, reference: str, prediction: str) -> dict:
        f1 = token_f1(prediction, reference)
        last_error = ""
        for _ in range(self.retries + 1):
            try:
                reply = self._ask(question, reference, prediction)
            except _Unanswered as e:
                last_error = str(e)
                break
            except (IndexError, AttributeError) as e:  # a reply without a message
                last_error = f"{type(e).__name__}: {e}"
                continue
            words = re.findall(r"[A-Za-z]+", reply.upper())
            if words and words[0] in ("CORRECT", "INCORRECT"):
                return {"correct": float(words[0] == "CORRECT"), "f1": f1, "judged_by": "http"}
            last_error = f"off-format verdict {reply[:80]!r}"
        return {
            "correct": float(rule_match(prediction, reference)),
            "f1": f1,
            "judged_by": "rule-fallback",
            "judge_error": last_error,
        }


class _Unanswered(Exception):
    """The judge endpoint gave no verdict (an API error, after the SDK's own retries)."""


def _api_error(e: Exception) -> str:
    from openai import APIStatusError  # imported already: the caller holds the SDK's client

    if isinstance(e, APIStatusError):
        return f"HTTP {e.status_code}: {' '.join(e.response.text.split())[:200]}"
    return f"{type(e).__name__}: {e}"


def make_judge(base_url: str | None, model: str | None, api_key: str | None = None):
    """``HttpJudge`` when an endpoint is configured, else the rule."""
    if base_url:
        return HttpJudge(base_url=base_url, model=model or "judge", api_key=api_key)
    return RuleJudge()
