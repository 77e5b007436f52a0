"""A plain PyTorch DDP training script with dpscale's three lines added (marked # dpscale).

Alone:           torchrun --nproc-per-node 2 examples/train_ddp.py --steps 30
Under dpscale:   dpscale measure --script examples/train_ddp.py --world-sizes 1,2 -- --steps 30

The backend is nccl with CUDA, else gloo; ``--backend`` or the DPSCALE_BACKEND variable
(which ``dpscale measure --backend`` sets) chooses one.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from dpscale.measure import StepTimer  # dpscale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32, help="Samples per rank per step.")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--backend", default=os.environ.get("DPSCALE_BACKEND", "auto"))
    args = parser.parse_args()

    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend)

    train(args, device)
    # Leave together, with DDP's reducer (which holds the process group) already gone: a gloo
    # rank torn down in another order can abort at exit ("terminate called without an active
    # exception") before its exit handlers write the timings.
    dist.barrier()
    dist.destroy_process_group()


def train(args: argparse.Namespace, device: torch.device) -> None:
    """The user's own loop: every object holding the process group ends with this call."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(args.width, 4 * args.width),
        nn.ReLU(),
        nn.Linear(4 * args.width, args.width),
    ).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    inputs = torch.randn(args.batch_size, args.width, device=device)
    targets = torch.randn(args.batch_size, args.width, device=device)

    timer = StepTimer(samples_per_step=args.batch_size, warmup=3)  # dpscale
    for _ in range(args.steps):
        with timer.step():  # dpscale
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(ddp(inputs), targets)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
