from dashboard.text import count_noun


def test_count_noun_says_one_in_the_singular_and_groups_thousands():
    assert count_noun(1, "GPU") == "1 GPU"
    assert count_noun(2, "host thread") == "2 host threads"
    assert count_noun(0, "row") == "0 rows"
    assert count_noun(1, "dispatch", "dispatches") == "1 dispatch"
    assert count_noun(1_200, "dispatch", "dispatches") == "1,200 dispatches"
    assert count_noun(3, "invalid kernel row") == "3 invalid kernel rows"
    assert count_noun(2, "blocking call", "calls") == "2 blocking calls"
