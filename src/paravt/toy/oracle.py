"""Moved: the toy oracle now lives in ``paravt.backends.toy_oracle`` (docs/CHANGELOG.md).

Recipes name it as ``trajectories.backend: paravt.toy.oracle:ToyOracleBackend``; that spelling
keeps working through this module. New recipes write ``paravt.backends.toy_oracle:ToyOracleBackend``.
"""

from __future__ import annotations

from paravt.backends.toy_oracle import ANSWER_FORMS, ToyOracleBackend

__all__ = ["ANSWER_FORMS", "ToyOracleBackend"]
