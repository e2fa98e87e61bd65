"""tasks/answers.py: the one reading of an answer out of a completion."""
from swarmnode.tasks import extract_answer


def test_extract_answer_is_the_one_format():
    assert extract_answer("42") == "42"
    assert extract_answer("\n 42 \nmore") == "42"
    assert extract_answer("think... <answer>1</answer> then <answer> 7 </answer>") == "7"
    assert extract_answer("   \n ") is None
    assert len(extract_answer("9" * 5000)) == 512
