"""verl.trainer stand-in."""


def report(module_name):
    import os
    import sys

    import verl

    print("VERL-STANDIN module=" + module_name)
    print("VERL-STANDIN package=" + os.path.dirname(os.path.abspath(verl.__file__)))
    for arg in sys.argv[1:]:
        print("ARG: " + arg)
    print("VERL-STANDIN done")
    return 0
