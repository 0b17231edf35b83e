"""The trainer-side vLLM pieces: ``stack`` checks that the installed vLLM, torch and TRL are a
stack ``trainer.use_vllm`` was tested on. The sampler itself is ``paravt.backends.vllm``."""
