"""A Lightning script with dpscale's callback added (marked # dpscale).

A tiny two-layer network learns random data on the CPU or the GPUs.

Alone:           torchrun --nproc-per-node 2 examples/train_lightning.py --steps 30
Under dpscale:   dpscale measure --script examples/train_lightning.py --world-sizes 1,2 \\
                     -- --steps 30

Under torchrun Lightning joins the process group torchrun describes (one device per process);
the backend is nccl with CUDA, else gloo; ``--backend`` or the DPSCALE_BACKEND variable (which
``dpscale measure --backend`` sets) chooses one.
"""

from __future__ import annotations

import argparse
import os

import lightning
import torch
from lightning.pytorch.strategies import DDPStrategy
from torch import nn

from dpscale.measure.adapters.lightning import StepTimerCallback  # dpscale


class Regression(lightning.LightningModule):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width)
        )

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        inputs, targets = batch
        return nn.functional.mse_loss(self.net(inputs), targets)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32, help="Samples per rank per step.")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--backend", default=os.environ.get("DPSCALE_BACKEND", "auto"))
    args = parser.parse_args()

    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    generator = torch.Generator().manual_seed(0)
    count = args.steps * args.batch_size * world
    data = torch.utils.data.TensorDataset(
        torch.randn(count, args.width, generator=generator),
        torch.randn(count, args.width, generator=generator),
    )
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size)
    trainer = lightning.Trainer(
        accelerator="gpu" if backend == "nccl" else "cpu",
        devices=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
        num_nodes=max(1, world // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))),
        strategy=DDPStrategy(process_group_backend=backend) if world > 1 else "auto",
        max_steps=args.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[StepTimerCallback(warmup=3)],  # dpscale
    )
    torch.manual_seed(0)
    trainer.fit(Regression(args.width), loader)
    if torch.distributed.is_initialized():
        # Every rank done before any tears gloo down: a rank that exits first aborts the
        # others' last collective (and their timings with it).
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
