"""verl.trainer.sft_trainer_ray stand-in (SFT runs)."""

import sys

from verl.trainer import report

if __name__ == "__main__":
    sys.exit(report("verl.trainer.sft_trainer_ray"))
