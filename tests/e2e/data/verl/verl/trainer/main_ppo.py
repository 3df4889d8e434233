"""verl.trainer.main_ppo stand-in (PPO and GRPO runs): checkpoints as ray_trainer.py's fit."""

import sys

from verl.trainer import run

if __name__ == "__main__":
    sys.exit(run("verl.trainer.main_ppo", save_last_always=False))
