"""What a run's model calls cost: the price table, a run's cost line, its `--budget`.

Why here, in the core: the settings read the price table (`WELCOMEMAT_MODEL_PRICES`), the
precompute run writes its cost into the run report, and the results page reads it back from
the stored report; `server/` and `precompute/` never import each other, so the one model of
a run's cost both read lives below them.

Money is US dollars. A price is per million tokens, input and output apart, as providers list
them; a run's cost is its input tokens times the input price plus its output tokens times the
output price, computed in `Decimal` and kept to the micro-dollar. Token counts are the
provider's own (`usage` of each answer), never an estimate. A model the table does not name
has no price: the tokens are still reported, the cost is `None` ("unknown"), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated

import redis
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidationError

from welcomemat import keys
from welcomemat.errors import ConfigError, StoredValueError

__all__ = [
    "DEFAULT_PRICES",
    "MAX_BUDGET_TOKENS",
    "MAX_BUDGET_USD",
    "PRICES_ENV_VAR",
    "LastRunCost",
    "ModelPrice",
    "PriceTable",
    "RunBudget",
    "RunCost",
    "cost_line",
    "format_usd",
    "parse_budget",
    "parse_price_table",
    "read_last_run_cost",
    "run_cost",
]

PRICES_ENV_VAR = "WELCOMEMAT_MODEL_PRICES"
_MICRO = Decimal("0.000001")  # costs are kept to the micro-dollar
_MAX_PRICE = Decimal(10_000)  # USD per 1M tokens: far above any listed price, below a typo's reach
MAX_BUDGET_TOKENS = 10**12
MAX_BUDGET_USD = Decimal(1_000_000)
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")
_PRICE = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
# Exact in Python, a plain number in JSON (the run report, the results download).
Usd = Annotated[Decimal, PlainSerializer(float, return_type=float, when_used="json")]


class ModelPrice(BaseModel):
    """USD per million tokens, input (the prompt) and output (the completion) apart."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: Usd = Field(ge=0, le=_MAX_PRICE)
    output_per_million: Usd = Field(ge=0, le=_MAX_PRICE)

    def label(self) -> str:
        """`$0.15/$0.60 per 1M`."""
        return f"${_plain(self.input_per_million)}/${_plain(self.output_per_million)} per 1M"


def _plain(value: Decimal) -> str:
    """A price as written: at least two decimals (`0.60`, `2.50`, `0.075`)."""
    text = format(value.normalize(), "f")
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents.ljust(2, '0')}"


@dataclass(frozen=True)
class PriceTable:
    """Model name → price, matched exactly (a dated snapshot is another model: it may cost more)."""

    prices: tuple[tuple[str, ModelPrice], ...] = ()

    def get(self, model: str | None) -> ModelPrice | None:
        if model is None:
            return None
        return next((price for name, price in self.prices if name == model), None)

    def merged(self, more: Iterable[tuple[str, ModelPrice]]) -> PriceTable:
        """This table with `more`'s entries added, a model named in both priced as in `more`."""
        table = dict(self.prices)
        table.update(more)
        return PriceTable(tuple(table.items()))


def _price(input_usd: str, output_usd: str) -> ModelPrice:
    return ModelPrice(input_per_million=Decimal(input_usd), output_per_million=Decimal(output_usd))


# OpenAI's list prices (standard processing, USD per 1M tokens) when this table was written.
# Check them against your provider's price list: `WELCOMEMAT_MODEL_PRICES` adds or replaces an entry.
DEFAULT_PRICES = PriceTable(
    (
        ("gpt-4o-mini", _price("0.15", "0.60")),
        ("gpt-4o", _price("2.50", "10.00")),
        ("gpt-4.1", _price("2.00", "8.00")),
        ("gpt-4.1-mini", _price("0.40", "1.60")),
        ("gpt-4.1-nano", _price("0.10", "0.40")),
    )
)


def parse_price_table(text: str | None, *, base: PriceTable = DEFAULT_PRICES) -> PriceTable:
    """`base` with the entries of a `WELCOMEMAT_MODEL_PRICES` value added (or replacing its own).

    The value: comma-separated `MODEL=INPUT/OUTPUT`, USD per million tokens (`gpt-4o-mini=0.15/0.60,
    local-llama=0/0`). A bad entry is a `ConfigError` naming the variable and the entry's position.
    """
    entries: dict[str, ModelPrice] = {}
    for position, raw in enumerate((text or "").split(","), start=1):
        entry = raw.strip()
        if not entry:
            continue
        name, equals, prices = entry.partition("=")
        name = name.strip()
        input_usd, slash, output_usd = prices.partition("/")
        input_usd, output_usd = input_usd.strip(), output_usd.strip()
        where = f"{PRICES_ENV_VAR} entry #{position}"
        if not equals or not slash:
            raise ConfigError(
                f"{where} must be MODEL=INPUT/OUTPUT, USD per 1M tokens (e.g. gpt-4o-mini=0.15/0.60)"
            )
        if _MODEL_NAME.fullmatch(name) is None:
            raise ConfigError(f"{where}: {name[:40]!r} is not a model name")
        for what, value in (("input", input_usd), ("output", output_usd)):
            if _PRICE.fullmatch(value) is None or Decimal(value) > _MAX_PRICE:
                raise ConfigError(
                    f"{where} ({name}): the {what} price {value[:20]!r} is not USD per 1M tokens "
                    f"from 0 to {_MAX_PRICE} (e.g. 0.15)"
                )
        if name in entries:
            raise ConfigError(f"{where}: {name} is priced twice")
        entries[name] = _price(input_usd, output_usd)
    return base.merged(entries.items())


class RunCost(BaseModel):
    """What a run's model calls cost: the calls, the tokens each way, the price and the total.

    `model` None: no model wrote (the offline composer): 0 calls, cost 0. `price` None with a
    model: the price table does not name it, and `cost_usd` is None (unknown), never a guess.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    model_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    price: ModelPrice | None = None
    cost_usd: Usd | None = Decimal(0)


def run_cost(
    model: str | None, *, model_calls: int, input_tokens: int, output_tokens: int, prices: PriceTable
) -> RunCost:
    """The cost of these tokens at `model`'s price in `prices` (no model: 0; not priced: unknown)."""
    price = prices.get(model)
    if model is None:
        cost: Decimal | None = Decimal(0)
    elif price is None:
        cost = None
    else:
        spent = input_tokens * price.input_per_million + output_tokens * price.output_per_million
        cost = (spent / 1_000_000).quantize(_MICRO, rounding=ROUND_HALF_UP)
    return RunCost(
        model=model,
        model_calls=model_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        price=price,
        cost_usd=cost,
    )


def format_usd(amount: Decimal | None) -> str:
    """`$0.41`; under a cent, to the hundredth of a cent (`$0.0036`) so it does not read as free."""
    if amount is None:
        return "unknown"
    if amount == 0:
        return "$0.00"
    if amount < Decimal("0.01"):
        return f"${amount.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}"
    return f"${amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}"


def cost_line(cost: RunCost) -> str:
    """`model calls 240, tokens 180,000 in / 24,000 out, cost $0.41 (gpt-4o-mini at $0.15/$0.60 per 1M)`."""
    head = (
        f"model calls {cost.model_calls:,}, tokens {cost.input_tokens:,} in / {cost.output_tokens:,} out, "
        f"cost {format_usd(cost.cost_usd)}"
    )
    if cost.model is None:
        return f"{head} (no model: the offline composer)"
    if cost.price is None:
        return f"{head} ({cost.model} has no price: set {PRICES_ENV_VAR})"
    return f"{head} ({cost.model} at {cost.price.label()})"


# -- --budget --------------------------------------------------------------------------------------


_TOKENS_BUDGET = re.compile(r"([0-9][0-9_,]*)\s*tokens?", re.IGNORECASE)
_USD_BUDGET = re.compile(r"\$\s*([0-9]+(?:\.[0-9]{1,6})?)|([0-9]+(?:\.[0-9]{1,6})?)\s*usd", re.IGNORECASE)


@dataclass(frozen=True)
class RunBudget:
    """A run's limit: model tokens (input and output together), or US dollars at the price table's rate."""

    tokens: int | None = None
    usd: Decimal | None = None

    def describe(self) -> str:
        return f"{self.tokens:,} tokens" if self.tokens is not None else format_usd(self.usd)

    def reached(self, spent: RunCost) -> bool:
        """Whether `spent` is at or past the limit (a money budget with an unknown cost is reached:
        nothing may be spent that cannot be counted; the command refuses that budget up front)."""
        if self.tokens is not None:
            return spent.input_tokens + spent.output_tokens >= self.tokens
        if spent.cost_usd is None:
            return True
        return self.usd is not None and spent.cost_usd >= self.usd


def parse_budget(text: str) -> RunBudget:
    """`100000tokens` / `100,000 tokens`, or `$5` / `5usd` / `2.50 USD`; ValueError saying what is taken."""
    value = text.strip()
    usage = "expected a number of tokens (e.g. 100000tokens) or of US dollars (e.g. $5 or 5usd)"
    tokens = _TOKENS_BUDGET.fullmatch(value)
    if tokens is not None:
        digits = tokens.group(1).replace("_", "").replace(",", "")
        if not digits or len(digits) > 13 or not 1 <= int(digits) <= MAX_BUDGET_TOKENS:
            raise ValueError(f"{text!r}: a token budget is from 1 to {MAX_BUDGET_TOKENS:,} tokens")
        return RunBudget(tokens=int(digits))
    usd = _USD_BUDGET.fullmatch(value)
    if usd is not None:
        amount = Decimal(usd.group(1) or usd.group(2))
        if not Decimal(0) < amount <= MAX_BUDGET_USD:
            raise ValueError(f"{text!r}: a money budget is more than $0 and at most ${MAX_BUDGET_USD:,}")
        return RunBudget(usd=amount)
    raise ValueError(f"{text!r}: {usage}")


# -- the last run's cost, as the results page reads it ---------------------------------------------


class LastRunCost(BaseModel):
    """The cost of the campaign's last precompute run, and per personal account it published."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    started_at: str
    cost: RunCost
    personal_published: int = Field(ge=0)
    # cost_usd / personal_published; None when the cost is unknown or no personal account was published.
    cost_per_personal_account_usd: Usd | None


class _StoredReport(BaseModel):
    """The fields of a stored run report (`precompute.report.RunReport`) the cost needs."""

    model_config = ConfigDict(extra="ignore")

    started_at: str
    cost: RunCost | None = None
    personal_published: int = Field(default=0, ge=0)


def read_last_run_cost(client: redis.Redis, tenant: str, campaign: str) -> LastRunCost | None:
    """The campaign's last run's cost (None: no run stored, or one from before costs were kept).

    A stored report that does not decode is a `StoredValueError` naming its key.
    """
    key = keys.run_report_key(tenant, campaign)
    raw = client.get(key)
    if raw is None:
        return None
    try:
        stored = _StoredReport.model_validate_json(raw)
    except ValidationError as exc:
        raise StoredValueError(key, f"the run report: {exc.errors()[0]['msg']}") from None
    if stored.cost is None:
        return None
    total, personal = stored.cost.cost_usd, stored.personal_published
    each = (
        (total / personal).quantize(_MICRO, rounding=ROUND_HALF_UP)
        if total is not None and personal
        else None
    )
    return LastRunCost(
        started_at=stored.started_at,
        cost=stored.cost,
        personal_published=personal,
        cost_per_personal_account_usd=each,
    )
