"""Measuring data-parallel scaling with torch.distributed (the optional ``measure`` extra).

Nothing here imports torch at import time: :mod:`~dpscale.measure.collectives` and
:mod:`~dpscale.measure.training` import it inside the functions that run on a rank, so the
CLI starts fast and can say how to install the extra when torch is missing.

Modules: ``config`` (settings and the plan), ``collectives`` and ``training`` (what a rank
times, and the summaries), ``worker`` (one rank, under torchrun or srun), ``launch`` (every
world size on one machine, or this node's part of a run across nodes, with timeouts and
clean-up), ``nodes`` (the cluster's shape, torchrun's command per node, launch line and
sbatch script), ``report`` (the run as JSON and tables), ``steptimer`` (:class:`StepTimer`,
the three lines that time a user's own training loop), ``script`` (``dpscale measure
--script``: that loop under torchrun at each world size) and ``script_rank`` (one rank of it:
the script run as ``python script.py`` would, in a process that dies with torchrun).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpscale.measure.steptimer import StepTimer

INSTALL_HINT = "pip install 'dpscale[measure]'"
"""How to get torch for ``dpscale measure``."""

__all__ = ["INSTALL_HINT", "StepTimer"]


def __getattr__(name: str) -> object:
    """``StepTimer`` on first use: ``import dpscale.measure`` stays as cheap as before."""
    if name == "StepTimer":
        from dpscale.measure.steptimer import StepTimer

        return StepTimer
    raise AttributeError(f"module 'dpscale.measure' has no attribute {name!r}")
