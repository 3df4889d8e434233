"""verl.trainer.main_ppo stand-in (PPO and GRPO runs)."""

import sys

from verl.trainer import report

if __name__ == "__main__":
    sys.exit(report("verl.trainer.main_ppo"))
