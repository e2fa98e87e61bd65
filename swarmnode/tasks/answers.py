"""The one place that defines how an answer is read out of a completion.

A completion answers with `<answer>X</answer>` (the last such tag wins), or, without a tag, with
its first non-empty line. The bundled tiny policy writes the bare answer then stops; hub models
are prompted (by the chat template and task text) and may use the tag.
"""
from __future__ import annotations

import re

_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
MAX_ANSWER_CHARS = 512


def extract_answer(completion: str) -> str | None:
    """The answer a completion gives, stripped, or None if it gives none."""
    tagged = _TAG.findall(completion)
    if tagged:
        answer = tagged[-1].strip()
    else:
        lines = [line.strip() for line in completion.splitlines() if line.strip()]
        answer = lines[0] if lines else ""
    return answer[:MAX_ANSWER_CHARS] or None
