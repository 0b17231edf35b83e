"""The rollout room: everything that samples episodes for training, and the cut of what was
sampled into the rows the learner reads.

Why a room of its own: the trainer's samplers used to sit half in ``paravt.backends`` (the policy,
vLLM) and half in ``paravt.train`` (the lockstep, the streams, the weight push, the vLLM stack
checks), and the two rooms imported each other. Here they sit together, above the engine
(``paravt.agent``) and the inference backends (``paravt.backends``, whose local-decoding helpers
the policy sampler shares), and below the learner (``paravt.train``), which imports this room and
is never imported by it. verl and AReaL call the same part the rollout.

- ``policy``: ``PolicyBackend``, the model being trained sampled in-process (in ``lockstep`` with
  the other ranks when its weights are sharded), and ``TokenSampler``, what every token-in/
  token-out training sampler shares;
- ``vllm``: ``VLLMBackend``, vLLM through TRL's generator (colocated) or paravt's server client;
  ``vllm_prompt`` (the token prompts vLLM is sent), ``vllm_async`` (vLLM's in-process async
  engine), ``vllm_server`` and ``vllm_server_client`` (server mode), ``weight_push`` (the weights
  reach the server once per step), ``vllm_stack`` and ``vllm_platform`` (which releases and
  which CPUs vLLM runs on, checked before a model loads; the probe that loads vLLM in a child
  is ``scripts/vllm_probe.py``);
- ``lockstep``: the ranks' small gathers that keep collective generate calls in step;
- ``streams``: an episode record as a ``LossRow`` (``record_row``), the one cut both trainers
  use;
- ``groups``: ``Rollout`` and ``RolloutGroup``, a step's episodes as they cross to the learner
  (the episodes of one prompt, its K, and the policy version each was sampled under).

vLLM is not a paravt dependency: the ``vllm*`` modules import it only where a sampler is built.
"""

__all__: list[str] = []  # nothing here is for the other rooms
