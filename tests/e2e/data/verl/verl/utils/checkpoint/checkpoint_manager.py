"""verl.utils.checkpoint.checkpoint_manager stand-in: the checkpoint tracker file and how the
latest checkpoint is found from it, as in verl 0.9.1 (same names, same rules, no torch).

A checkpoint folder holds global_step_<N>/ per saved step and latest_checkpointed_iteration.txt,
which names the latest N; a tracker naming a step whose folder is missing means no checkpoint.
"""

import os


def get_checkpoint_tracker_filename(root_path):
    return os.path.join(root_path, "latest_checkpointed_iteration.txt")


def find_latest_ckpt_path(path, directory_format="global_step_{}"):
    """The latest global_step_<N> folder under path as its tracker names it, or None."""
    if path is None:
        return None
    tracker_file = get_checkpoint_tracker_filename(path)
    if not os.path.exists(tracker_file):
        print(f"Checkpoint tracker file does not exist: {tracker_file}")
        return None
    with open(tracker_file, "rb") as f:
        iteration = int(f.read().decode())
    ckpt_path = os.path.join(path, directory_format.format(iteration))
    if not os.path.exists(ckpt_path):
        print(f"Checkpoint does not exist: {ckpt_path}")
        return None
    print(f"Found checkpoint: {ckpt_path}")
    return ckpt_path
