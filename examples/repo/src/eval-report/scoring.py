"""How a GSM8K-style answer is read from a model's response.

Modelled on the two rules of verl's GSM8K reward (verl/utils/reward_score/gsm8k.py):
`strict` takes only the number after the "#### " marker the training prompt asks for;
`flexible` takes the last number in the response. A change here changes every score the report prints, which is why the report names
the version of this code it ran.
"""

import re

_STRICT = re.compile(r"#### (-?[0-9.,]+)")
_NUMBER = re.compile(r"-?[0-9][0-9.,]*")


def _normalise(text):
    return text.replace(",", "").replace("$", "").rstrip(".")


def extract(response, method="strict"):
    """The final answer of `response` as a string, or None when the rule finds none."""
    if method == "strict":
        found = _STRICT.findall(response)
        return _normalise(found[-1]) if found else None
    if method == "flexible":
        found = _NUMBER.findall(response)
        return _normalise(found[-1]) if found else None
    raise ValueError("unknown method " + repr(method))


def score(sample, method):
    """1 when the response's answer equals the reference answer, else 0."""
    reference = _normalise(sample["reference"].split("####")[-1].strip())
    return int(extract(sample["response"], method) == reference)
