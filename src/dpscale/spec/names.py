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

from collections.abc import Iterable

__all__ = ["OTHER_NAMES", "meant"]

_COUNTS = ("devices", "world_sizes", "at")

OTHER_NAMES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "gpus",
            "num_gpus",
            "world_size",
            "world_sizes",
            "nproc",
            "counts",
            "device_counts",
            # The CLI's own aliases: fit --devices is its "at", predict --at its "devices".
            "devices",
            "at",
        ),
        _COUNTS,
    ),
    "nodes": ("devices", "devices_per_node", "nnodes"),
    **dict.fromkeys(
        ("batch_size", "mbs", "micro_batch_size", "per_device_train_batch_size"),
        ("micro_batch",),
    ),
    **dict.fromkeys(
        ("global_batch", "global_batch_size", "gbs"), ("micro_batch", "grad_accum", "devices")
    ),
    **dict.fromkeys(("gradient_accumulation_steps", "grad_accum_steps", "accum"), ("grad_accum",)),
    **dict.fromkeys(("precision", "dtype"), ("grad_dtype", "param_dtype", "precision")),
    **dict.fromkeys(("model_size", "num_params", "parameters"), ("params", "model_params")),
    **dict.fromkeys(
        ("tokens_per_second", "tokens_per_sec", "tps"), ("per_device_throughput", "unit")
    ),
    # The calculator's own letters (I = d v, A = I E): -d and -e are options, v is not.
    **dict.fromkeys(("v", "per_device"), ("throughput", "per_device_throughput")),
}
"""Each other name (as a field name: ``--num-gpus`` is ``num_gpus``) and the inputs that may
take it, in the order to offer them."""


def meant(name: str, known: Iterable[str]) -> list[str]:
    """The inputs among ``known`` that ``name`` (another tool's name) stands for, in order."""
    here = set(known)
    return [target for target in OTHER_NAMES.get(name, ()) if target in here]
