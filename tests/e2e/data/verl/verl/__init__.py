"""Stand-in for verl in the end-to-end tests: same module paths, no training.

The trainers print where they were imported from and every command-line argument on its
own line, so a test can check that each Hydra override reached the process intact; then they
step through training and save and resume checkpoints as verl 0.9.1 does (verl/trainer).
"""
