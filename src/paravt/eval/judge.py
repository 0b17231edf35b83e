"""Scoring open-ended answers (MMVU): a rule-based default and an optional judge model.

``RuleJudge`` needs nothing but text: a prediction is correct when, after normalisation
(lower case, punctuation and articles dropped), it equals the reference or contains it as a
whole-word phrase; the token F1 is reported beside it. ``HttpJudge`` asks any OpenAI-compatible
chat endpoint (a local vLLM/SGLang server or a hosted API) whether the prediction matches the
reference, greedily and with a one-word verdict; its endpoint and model are recorded in the
summary. When the judge cannot be reached or answers off-format, the rule decides that sample and
the failure is counted (``judged_by: rule-fallback``) — a judge outage never scores a sample as
correct.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

from paravt.rewards import answer_text, oe_tokens, offers_alternatives, overlap_f1


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

    def _url(self) -> str:
        base = self.base_url.rstrip("/")
        if base.endswith("/chat/completions"):
            return base
        if not base.endswith("/v1"):
            base += "/v1"
        return base + "/chat/completions"

    def _ask(self, question: str, reference: str, prediction: str) -> str:
        body = {
            "model": self.model,
            "temperature": 0.0,
            "max_tokens": 8,
            "messages": [
                {"role": "system", "content": _JUDGE_SYSTEM},
                {
                    "role": "user",
                    "content": f"Question: {question}\nReference answer: {reference}\n"
                    f"Candidate answer: {prediction}\nVerdict:",
                },
            ],
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            self._url(), data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
            data = json.loads(resp.read().decode())
        return str(data["choices"][0]["message"]["content"] or "")

    def judge(self, question: str, reference: str, prediction: str) -> dict:
        f1 = token_f1(prediction, reference)
        last_error = ""
        for _ in range(self.retries + 1):
            try:
                reply = self._ask(question, reference, prediction)
            except (
                urllib.error.URLError,
                OSError,
                ValueError,
                KeyError,
                IndexError,
                TypeError,
            ) as e:
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


def make_judge(base_url: str | None, model: str | None, api_key: str | None = None):
    """``HttpJudge`` when an endpoint is configured, else the rule."""
    if base_url:
        return HttpJudge(base_url=base_url, model=model or "judge", api_key=api_key)
    return RuleJudge()
