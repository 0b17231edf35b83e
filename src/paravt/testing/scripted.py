"""Moved: ``ScriptedBackend`` is a backend and lives in ``paravt.agent.backends.scripted``.

This name is kept only until ``paravt.toy.oracle`` and ``paravt.train.sft.trajectories`` import
it from its home (issue 15.2); nothing new should import it from here.
"""

from paravt.agent.backends.scripted import ScriptedBackend

__all__ = ["ScriptedBackend"]
