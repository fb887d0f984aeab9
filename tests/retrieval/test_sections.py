"""Which sections a question asks about, and the pages of a filing where they open."""

from finrag.retrieval.systems.sections import section_pages, sections_named

CONTENTS = "\n".join(f"Item {n}.\n{title}\n{page}" for n, title, page in [
    ("1", "Business", 2), ("1A", "Risk Factors", 34), ("1B", "Unresolved Staff Comments", 62),
    ("2", "Properties", 62), ("3", "Legal Proceedings", 63), ("4", "Mine Safety", 63)])


def test_a_question_names_the_sections_it_asks_about_in_order():
    assert sections_named("Has CVS Health reported any materially important ongoing legal "
                          "battles from 2022, 2021 and 2020?") == ["legal"]
    assert sections_named("As of Q2'2023, is Pfizer spinning off any large business "
                          "segments?") == ["segments"]
    assert sections_named("Did AMD report customer concentration in FY22?") == ["customers"]
    assert sections_named("Is Boeing subject to any lawsuits over its segments?") == [
        "risk", "legal", "segments"]
    # a figure question names no section; "risk" alone (VaR) is not the risk factors
    assert sections_named("What was Adobe's FY2022 operating margin?") == []
    assert sections_named("Looking at VaR, did the risk JPM faced decrease?") == []


def test_sections_open_where_their_heading_stands_alone_and_contents_pages_are_left_out():
    pages = [(2, CONTENTS),
             (36, "Item 1A. Risk Factors.\nOur business is subject to risks ..."),
             (65, "leases ...\nItem 3. Legal Proceedings.\nThe information in Note 16 ..."),
             (128, "Revenue by product\nDisaggregation of Revenue\nThe table below ..."),
             (171, "NOTE 16. Commitments and Contingencies\nLegal Matters\nThe Company is party"),
             (172, "We discuss legal proceedings in Note 16 and segment results in Note 18.")]
    assert section_pages(pages) == {36: ["risk"], 65: ["legal"], 128: ["segments"],
                                    171: ["legal"]}
