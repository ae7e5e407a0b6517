"""The price table, a run's cost line and `--budget`: what each accepts, what it refuses, its figures."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.errors import ConfigError
from welcomemat.model_cost import (
    DEFAULT_PRICES,
    MAX_BUDGET_TOKENS,
    PRICES_ENV_VAR,
    ModelPrice,
    PriceTable,
    RunBudget,
    RunCost,
    cost_line,
    format_usd,
    parse_budget,
    parse_price_table,
    run_cost,
)
from welcomemat.settings import Settings

MODEL_NAMES = st.from_regex(r"[a-z][a-z0-9.-]{0,30}", fullmatch=True)
PRICES = st.decimals(min_value=0, max_value=9999, places=2, allow_nan=False, allow_infinity=False)


def test_the_brief_example_line() -> None:
    cost = run_cost(
        "gpt-4o-mini", model_calls=240, input_tokens=180_000, output_tokens=24_000, prices=DEFAULT_PRICES
    )
    # 180,000 × $0.15 + 24,000 × $0.60, per 1M: $0.027 + $0.0144
    assert cost.cost_usd == Decimal("0.041400")
    assert cost_line(cost) == (
        "model calls 240, tokens 180,000 in / 24,000 out, cost $0.04 (gpt-4o-mini at $0.15/$0.60 per 1M)"
    )


def test_no_model_costs_nothing_and_an_unpriced_model_is_unknown_not_guessed() -> None:
    offline = run_cost(None, model_calls=0, input_tokens=0, output_tokens=0, prices=DEFAULT_PRICES)
    assert offline.cost_usd == 0 and cost_line(offline).startswith(
        "model calls 0, tokens 0 in / 0 out, cost $0.00"
    )
    unknown = run_cost("my-llama", model_calls=3, input_tokens=300, output_tokens=150, prices=DEFAULT_PRICES)
    assert unknown.cost_usd is None and unknown.price is None
    assert cost_line(unknown) == (
        f"model calls 3, tokens 300 in / 150 out, cost unknown (my-llama has no price: set {PRICES_ENV_VAR})"
    )
    # A dated snapshot is another model: priced only when named.
    assert DEFAULT_PRICES.get("gpt-4o-mini-2024-07-18") is None


def test_a_cost_under_a_cent_does_not_read_as_free() -> None:
    assert format_usd(Decimal("0.0016")) == "$0.0016"
    assert format_usd(Decimal("1234.5")) == "$1,234.50"
    assert format_usd(None) == "unknown"


def test_the_environment_adds_and_replaces_prices() -> None:
    settings = Settings.from_env({PRICES_ENV_VAR: "test-model=1/2, gpt-4o-mini=0.075/0.30"})
    assert settings.model_prices.get("test-model") == ModelPrice(
        input_per_million=Decimal(1), output_per_million=Decimal(2)
    )
    assert settings.model_prices.get("gpt-4o-mini") == ModelPrice(
        input_per_million=Decimal("0.075"), output_per_million=Decimal("0.30")
    )
    assert settings.model_prices.get("gpt-4o") == DEFAULT_PRICES.get("gpt-4o")  # the rest kept
    assert Settings.from_env({}).model_prices == DEFAULT_PRICES


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("gpt-4o-mini", "entry #1 must be MODEL=INPUT/OUTPUT"),
        ("a=1/2,b=0.15", "entry #2 must be MODEL=INPUT/OUTPUT"),
        ("a=1/2,a=3/4", "entry #2: a is priced twice"),
        ("a=-1/2", "entry #1 (a): the input price '-1' is not USD per 1M tokens"),
        ("a=1/lots", "entry #1 (a): the output price 'lots' is not USD per 1M tokens"),
        ("a=1/99999", "the output price '99999'"),
        ("=1/2", "entry #1: '' is not a model name"),
    ],
)
def test_a_bad_price_entry_names_the_variable_and_the_entry(value: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({PRICES_ENV_VAR: value})
    assert PRICES_ENV_VAR in str(caught.value) and says in str(caught.value)


@given(st.dictionaries(MODEL_NAMES, st.tuples(PRICES, PRICES), min_size=1, max_size=5))
def test_a_written_price_table_reads_back_as_written(table: dict[str, tuple[Decimal, Decimal]]) -> None:
    text = ",".join(f"{name}={i}/{o}" for name, (i, o) in table.items())
    parsed = parse_price_table(text, base=PriceTable())
    assert {name: (p.input_per_million, p.output_per_million) for name, p in parsed.prices} == table


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=10**9), PRICES, PRICES)
def test_the_cost_is_tokens_times_price_to_the_micro_dollar(
    tokens_in: int, tokens_out: int, price_in: Decimal, price_out: Decimal
) -> None:
    table = PriceTable((("m", ModelPrice(input_per_million=price_in, output_per_million=price_out)),))
    cost = run_cost("m", model_calls=1, input_tokens=tokens_in, output_tokens=tokens_out, prices=table)
    exact = (tokens_in * price_in + tokens_out * price_out) / 1_000_000
    assert cost.cost_usd is not None and abs(cost.cost_usd - exact) <= Decimal("0.0000005")


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("100000tokens", RunBudget(tokens=100_000)),
        ("100,000 tokens", RunBudget(tokens=100_000)),
        ("1_000 TOKENS", RunBudget(tokens=1_000)),
        ("$5", RunBudget(usd=Decimal(5))),
        ("$0.50", RunBudget(usd=Decimal("0.50"))),
        ("5usd", RunBudget(usd=Decimal(5))),
        ("2.5 USD", RunBudget(usd=Decimal("2.5"))),
    ],
)
def test_a_budget_in_tokens_or_dollars(text: str, budget: RunBudget) -> None:
    assert parse_budget(text) == budget


@pytest.mark.parametrize(
    "text", ["", "5", "5 euros", "$", "$-1", "$0", "0tokens", "five usd", "5k tokens", "$1e3"]
)
def test_a_budget_without_its_unit_or_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="token|dollar|\\$"):
        parse_budget(text)


@given(st.integers(min_value=1, max_value=MAX_BUDGET_TOKENS), st.sampled_from(["tokens", " tokens", "token"]))
def test_any_whole_number_of_tokens_is_a_budget(count: int, unit: str) -> None:
    assert parse_budget(f"{count}{unit}") == RunBudget(tokens=count)


@given(st.text(max_size=30))
def test_parse_budget_never_raises_anything_but_a_value_error(text: str) -> None:
    try:
        budget = parse_budget(text)
    except ValueError:
        return
    assert (budget.tokens is None) != (budget.usd is None)


def test_a_budget_is_reached_at_its_limit() -> None:
    table = PriceTable((("m", ModelPrice(input_per_million=Decimal(1), output_per_million=Decimal(2))),))
    spent = run_cost(
        "m", model_calls=2, input_tokens=200, output_tokens=100, prices=table
    )  # 300 tokens, $0.0004
    assert RunBudget(tokens=300).reached(spent) and not RunBudget(tokens=301).reached(spent)
    assert RunBudget(usd=Decimal("0.0004")).reached(spent) and not RunBudget(usd=Decimal("0.0005")).reached(
        spent
    )
    unpriced = run_cost("x", model_calls=1, input_tokens=1, output_tokens=1, prices=table)
    assert RunBudget(usd=Decimal(5)).reached(unpriced)  # what cannot be counted is not spent


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.decimals(min_value=0, max_value=9999, places=6, allow_nan=False, allow_infinity=False),
    PRICES,
)
def test_a_stored_cost_reads_back_to_the_same_figures(
    tokens_in: int, tokens_out: int, price_in: Decimal, price_out: Decimal
) -> None:
    table = PriceTable((("m", ModelPrice(input_per_million=price_in, output_per_million=price_out)),))
    cost = run_cost("m", model_calls=3, input_tokens=tokens_in, output_tokens=tokens_out, prices=table)
    assert RunCost.model_validate_json(cost.model_dump_json()) == cost
