"""verl.utils.checkpoint stand-in."""
