"""One retry rule for paravt's HTTP clients (the openai backend, the vLLM server client).

A request that meets a connection error, a time-out, an answer that is not JSON, or an HTTP status
a busy or restarting server gives (``RETRY_STATUS``) is sent again after a wait that doubles each
time (``backoff_s``, ``2 * backoff_s``, ...); any other HTTP error ends the attempts at once. The
caller decides what the last failure becomes: a ``Generation`` error (one episode's) or a typed
error that stops the run.
"""

from __future__ import annotations

import json
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: answers worth another try: the server is busy, restarting, or behind a proxy that timed out
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass
class Attempts:
    """What ``with_retries`` ended with: the reply (``ok``), or the last failure, and how many
    attempts were made."""

    ok: bool
    reply: Any = None
    error: str = ""
    count: int = 0


def with_retries(
    send: Callable[[], Any],
    *,
    where: str,
    retries: int,
    backoff_s: float,
    on_failure: Callable[[str], None] | None = None,
) -> Attempts:
    """``send()`` (one request, raising urllib's errors) up to ``retries + 1`` times. ``where``
    names the server in the failure text; ``on_failure`` hears each failure as it happens."""
    last = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            return Attempts(True, send(), count=attempt + 1)
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:300] if e.fp is not None else ""
            last = f"HTTP {e.code} from {where}: {detail}".strip()
            again = e.code in RETRY_STATUS
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            last, again = f"cannot reach {where}: {getattr(e, 'reason', e)}", True
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            last, again = f"invalid JSON from {where}: {e}", True
        if on_failure is not None:
            on_failure(last)
        if not again:
            return Attempts(False, error=last, count=attempt + 1)
    return Attempts(False, error=last, count=retries + 1)
