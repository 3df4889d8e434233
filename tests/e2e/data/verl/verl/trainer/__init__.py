"""verl.trainer stand-in: prints what it was given, then "trains" as verl 0.9.1 does with
respect to checkpoints.

Read from the Hydra overrides (the last one of a key wins): trainer.default_local_dir (verl's
default checkpoints/<project_name>/<experiment_name>, relative to the working directory),
trainer.save_freq (default -1: no checkpoints), trainer.total_training_steps (verl counts them
from the data; the stand-in has none and defaults to 1), trainer.resume_mode (auto, the
default: resume from the tracker's step if there is one; disable; resume_path with
trainer.resume_from_path) and trainer.experiment_name.

Steps run from the resumed step + 1 to total_training_steps. A step N is saved to
<default_local_dir>/global_step_N/ and the tracker file then names N: for PPO when save_freq
> 0 and N is a multiple of it or the last step (ray_trainer.py's fit), for SFT also the last
step whatever save_freq says (sft_trainer_ray.py's fit).

For tests: STANDIN_FAIL_AT_STEP=N makes a run that did not resume exit 1 at step N, before
saving it, so a retried attempt that resumes from its predecessor's checkpoint gets past it.
"""

import json
import os
import sys

STEP_DIR_FORMAT = "global_step_{}"


def report(module_name):
    import verl

    print("VERL-STANDIN module=" + module_name)
    print("VERL-STANDIN package=" + os.path.dirname(os.path.abspath(verl.__file__)))
    for arg in sys.argv[1:]:
        print("ARG: " + arg)


def _hydra_value(text):
    # Values ray-gitops quotes for Hydra arrive as 'a b' (with \' and \\ inside).
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].replace("\\" + text[0], text[0]).replace("\\\\", "\\")
    return text


def _overrides(argv):
    values = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep:
            values[key.lstrip("+~")] = _hydra_value(value)
    return values


def _config(argv):
    o = _overrides(argv)
    project = o.get("trainer.project_name", "verl_examples")
    experiment = o.get("trainer.experiment_name", "gsm8k")
    steps = o.get("trainer.total_training_steps", "null")
    local_dir = o.get("trainer.default_local_dir", f"checkpoints/{project}/{experiment}")
    if not os.path.isabs(local_dir):
        local_dir = os.path.join(os.getcwd(), local_dir)
    resume_from = o.get("trainer.resume_from_path", "null")
    return {
        "experiment_name": experiment,
        "default_local_dir": local_dir,
        "save_freq": int(o.get("trainer.save_freq", "-1")),
        "total_training_steps": 1 if steps == "null" else int(steps),
        "resume_mode": o.get("trainer.resume_mode", "auto"),
        "resume_from_path": None if resume_from == "null" else resume_from,
    }


def _resume_step(config):
    """The global step to continue from (0: from scratch), as verl's _load_checkpoint."""
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    mode = config["resume_mode"]
    if mode == "disable":
        return 0, None
    if mode == "resume_path" or (mode == "auto" and config["resume_from_path"]):
        folder = config["resume_from_path"]
        assert folder and "global_step_" in folder, "resume_from_path must name a global_step_ folder"
    elif mode == "auto":
        folder = find_latest_ckpt_path(config["default_local_dir"], STEP_DIR_FORMAT)
        if folder is None:
            print("Training from scratch")
            return 0, None
    else:
        raise ValueError(f"Invalid resume_mode: {mode}. Must be 'auto', 'disable', or 'resume_path'")
    return int(folder.rstrip("/").split("global_step_")[-1]), folder


def _save(config, step, atomic_tracker):
    root = config["default_local_dir"]
    folder = os.path.join(root, STEP_DIR_FORMAT.format(step))
    os.makedirs(os.path.join(folder, "actor"), exist_ok=True)
    with open(os.path.join(folder, "actor", "standin_state.json"), "w") as f:
        json.dump({"global_step": step, "experiment_name": config["experiment_name"]}, f)
    tracker = os.path.join(root, "latest_checkpointed_iteration.txt")
    # verl's SFT handler writes the tracker through a rename; its PPO trainer writes in place.
    target = tracker + ".tmp" if atomic_tracker else tracker
    with open(target, "w") as f:
        f.write(str(step))
    if atomic_tracker:
        os.rename(target, tracker)
    print(f"VERL-STANDIN saved {STEP_DIR_FORMAT.format(step)} to {folder}")


def train(argv, save_last_always):
    config = _config(argv)
    start, folder = _resume_step(config)
    if folder is None:
        print("VERL-STANDIN training from scratch")
    else:
        print(f"VERL-STANDIN resumed from global step {start} ({folder})")
    fail_at = int(os.environ.get("STANDIN_FAIL_AT_STEP", "0") or "0")
    total, save_freq = config["total_training_steps"], config["save_freq"]
    for step in range(start + 1, total + 1):
        if step == fail_at and start == 0:
            print(f"VERL-STANDIN failing at step {step} (STANDIN_FAIL_AT_STEP)", flush=True)
            return 1
        print(f"VERL-STANDIN step {step}")
        last = step >= total
        if (save_freq > 0 and (last or step % save_freq == 0)) or (save_last_always and last):
            _save(config, step, atomic_tracker=save_last_always)
    return 0


def run(module_name, save_last_always):
    report(module_name)
    code = train(sys.argv[1:], save_last_always)
    if code == 0:
        print("VERL-STANDIN done")
    sys.stdout.flush()
    return code
