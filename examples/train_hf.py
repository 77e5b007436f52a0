"""A Hugging Face Trainer script with dpscale's callback added (marked # dpscale).

A tiny GPT-2 built from a config (no download) learns random tokens on the CPU or the GPUs.

Alone:           torchrun --nproc-per-node 2 examples/train_hf.py --steps 30
Under dpscale:   dpscale measure --script examples/train_hf.py --world-sizes 1,2 -- --steps 30

The Trainer starts the process group itself (nccl with CUDA, else gloo); the DPSCALE_BACKEND
variable (which ``dpscale measure --backend`` sets) or ``--backend`` chooses one.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from dpscale.measure.adapters.hf import StepTimerCallback  # dpscale


class RandomTokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """``count`` sequences of random tokens, their own labels (a causal LM's)."""

    def __init__(self, count: int, seq_len: int, vocab: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.tokens = torch.randint(0, vocab, (count, seq_len), generator=generator)

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.tokens[index], "labels": self.tokens[index]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=8, help="Samples per rank per step.")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--backend", default=os.environ.get("DPSCALE_BACKEND", "auto"))
    args = parser.parse_args()

    use_cpu = args.backend == "gloo" or not torch.cuda.is_available()
    config = GPT2Config(
        vocab_size=256,
        n_positions=args.seq_len,
        n_embd=args.hidden,
        n_layer=args.layers,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    data = RandomTokens(args.steps * args.batch_size * world, args.seq_len, config.vocab_size)
    with tempfile.TemporaryDirectory() as output:
        training = TrainingArguments(
            output_dir=output,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            learning_rate=1e-4,
            use_cpu=use_cpu,
            ddp_backend=None if args.backend == "auto" else args.backend,
            save_strategy="no",
            logging_strategy="no",
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
        )
        trainer = Trainer(
            model=model,
            args=training,
            train_dataset=data,
            callbacks=[StepTimerCallback(warmup=3)],  # dpscale
        )
        trainer.train()
    if torch.distributed.is_initialized():
        # Every rank done before any tears gloo down: a rank that exits first aborts the
        # others' last collective (and their timings with it).
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
