"""verl.trainer.sft_trainer_ray stand-in (SFT runs): checkpoints as sft_trainer_ray.py's fit."""

import sys

from verl.trainer import run

if __name__ == "__main__":
    sys.exit(run("verl.trainer.sft_trainer_ray", save_last_always=True))
