"""Ratios a question defines for itself, read into the formula language (no store needed)."""

import pytest

from finrag.retrieval.facts.classify import classify
from finrag.retrieval.facts.concepts import default_concepts
from finrag.retrieval.facts.definitions import DefinitionError, asked_definition, read_definitions


@pytest.fixture(scope="module")
def concepts():
    return default_concepts()


def test_an_average_over_named_years_reads_as_avg_at_the_later_year(concepts):
    d = asked_definition("What is X's FY2022 ROA? ROA is defined as: FY2022 net income / "
                         "(average total assets between FY2021 and FY2022). Round to two "
                         "decimal places.", concepts)
    assert (d.name, d.formula, d.year) == ("ROA", "net_income / ( avg(total_assets) )", 2022)
    assert d.text.startswith("ROA = FY2022 net income / (average total assets")


def test_an_earlier_year_reads_as_prior_and_change_in_as_change(concepts):
    [d] = read_definitions("Turnover is defined as: FY2019 COGS / FY2018 inventory.", concepts)
    assert (d.formula, d.year) == ("cost_of_revenue / prior(inventory)", 2019)
    [d] = read_definitions("DPO is defined as: 365 * (average accounts payable between FY2017 "
                           "and FY2018) / (FY2018 COGS + change in inventory between FY2017 and "
                           "FY2018).", concepts)
    assert d.formula == ("365 * ( avg(accounts_payable) ) / "
                         "( cost_of_revenue + change(inventory) )")


def test_words_for_operators_and_the_define_x_as_form(concepts):
    [d] = read_definitions("Define working capital ratio as total current assets divided by "
                           "total current liabilities.", concepts)
    assert d.formula == "current_assets / current_liabilities"
    [d] = read_definitions("Define unadjusted EBITDA as unadjusted operating income + "
                           "depreciation and amortization from the cash flow statement.", concepts)
    assert d.formula == "operating_income + depreciation_amortization"
    assert d.metric(concepts).kind == "flow"


def test_a_name_defined_in_another_definition_is_expanded(concepts):
    q = ("What is the FY2019 CCC? CCC is defined as: DIO + DSO - DPO. DIO is defined as: 365 * "
         "(average inventory between FY2018 and FY2019) / (FY2019 COGS). DSO is defined as: 365 * "
         "(average accounts receivable between FY2018 and FY2019) / (FY2019 Revenue). DPO is "
         "defined as: 365 * (average accounts payable between FY2018 and FY2019) / (FY2019 COGS "
         "+ change in inventory between FY2018 and FY2019).")
    d = asked_definition(q, concepts)
    assert d.name == "CCC"
    assert d.formula == ("(365 * ( avg(inventory) ) / ( cost_of_revenue )) + "
                         "(365 * ( avg(accounts_receivable) ) / ( revenue )) - "
                         "(365 * ( avg(accounts_payable) ) / ( cost_of_revenue + change(inventory) ))")


def test_a_definition_that_does_not_read_says_which_part(concepts):
    with pytest.raises(DefinitionError, match="'headcount' is not a metric of the table"):
        read_definitions("Revenue per head is defined as: revenue / headcount.", concepts)
    with pytest.raises(DefinitionError, match="spans 2 years"):
        read_definitions("X is defined as: average total assets between FY2020 and FY2022.",
                         concepts)


def test_classify_answers_with_the_definition_or_says_why_not(concepts):
    q = classify("What is the FY2018 fixed asset turnover ratio for CVS Health? Fixed asset "
                 "turnover ratio is defined as: FY2018 revenue / (average PP&E between FY2017 and "
                 "FY2018). Round your answer to two decimal places.", concepts)
    [m] = q.metrics  # the same formula as the table's: the table's metric, its key kept
    assert q.route == "metric_lookup" and (m.key, m.formula) == ("fixed_asset_turnover",
                                                                 "revenue / avg(ppe_net)")
    assert q.periods == [(2018, None)] and q.definition.startswith("Fixed asset turnover ratio =")
    # another definition than the table's: the question's wins
    q = classify("What is X's ROA? ROA is defined as: FY2022 net income / FY2022 total assets.",
                 concepts)
    [m] = q.metrics
    assert (m.key, m.formula, m.kind) == ("defined_roa", "net_income / total_assets", "ratio")
    assert q.periods == [(2022, None)]
    # a definition of an input of the asked metric goes into the asked metric's formula
    q = classify("What is the FY2018 - FY2020 3 year average unadjusted EBITDA % margin for "
                 "Walmart? Define unadjusted EBITDA as unadjusted operating income + depreciation "
                 "and amortization from the cash flow statement.", concepts)
    assert q.metrics[0].key == "ebitda_margin"  # the table's EBITDA is that definition
    assert q.average and q.span == 3 and sorted(q.periods) == [(2018, None), (2019, None),
                                                               (2020, None)]
    q = classify("What is X's FY2020 EBITDA margin? Define EBITDA as operating income + "
                 "depreciation and amortization + stock based compensation.", concepts)
    assert q.metrics[0].formula == ("(operating_income + depreciation_amortization + "
                                    "stock_based_compensation) / revenue")
    # unreadable: the table's metric answers, and the error is kept to be said
    q = classify("What is X's FY2020 current ratio? Current ratio is defined as: current "
                 "assets / short-term obligations.", concepts)
    assert q.metrics[0].key == "current_ratio" and "short-term obligations" in q.definition_error
