"""Names other tools give dpscale's inputs, and the inputs that take them.

torchrun says ``--nproc-per-node``, the Hugging Face Trainer ``per_device_train_batch_size``
and ``gradient_accumulation_steps``, Megatron-LM ``global_batch_size``, and one dpscale command
names an input another names otherwise (``measure --world-sizes``, ``predict --devices``,
``fit --at``). A name that is no input of the command, the library call or the API endpoint
it was given to is pointed to the inputs that take it there, by their field names (the CLI's
options with dashes): a guess by spelling alone had sent ``predict --world-sizes`` to
``--hidden-size``, ``measure --devices`` to ``--sizes`` and the API's ``gpus`` to nothing.

>>> OTHER_NAMES["gpus"]
('devices', 'world_sizes', 'at')
>>> meant("batch_size", ["micro_batch", "devices"]), meant("nothing", ["devices"])
(['micro_batch'], [])
>>> meant("devices", ["points", "at", "devices_per_node"]), meant("at", ["devices", "params"])
(['at'], ['devices'])
"""

from __future__ import annotations

from dpscale.validation import OTHER_NAMES, meant

__all__ = ["OTHER_NAMES", "meant"]
