"""verl.utils stand-in."""
