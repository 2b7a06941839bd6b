"""Failure statistics: MTBF with its confidence interval, per-unit MTBF, time between failures.

Pure functions over counts and times, no I/O, no third-party maths library: the chi-square
quantiles come from the regularized incomplete gamma function computed here (series and
continued fraction, Numerical Recipes 3rd ed. §6.2) and inverted by bisection, which is
exact to ~1e-12 relative where the Wilson–Hilferty approximation is off by percents at the
small counts a cluster sees in a week.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 100_000


class MTBF(TypedDict):
    interruptions: int
    observed_hours: float
    mtbf_hours: float | None
    ci95: list[float | None]


class UnitMTBF(TypedDict):
    units: int
    failures: int
    observed_hours: float
    unit_hours: float
    unit_mtbf_hours: float | None
    ci95: list[float | None]
    project_to: int | None
    projected_mtbf_hours: float | None


class WeibullFit(TypedDict):
    shape: float
    scale_hours: float
    gaps: int


class BetweenFailures(TypedDict):
    count: int
    mean_hours: float | None
    median_hours: float | None
    zero_gaps: int
    weibull: WeibullFit | None


# --- chi-square quantiles -------------------------------------------------------------

def _gamma_p(a: float, x: float) -> float:
    """Regularized lower incomplete gamma P(a, x) (Numerical Recipes §6.2 gser/gcf)."""
    if x <= 0.0:
        return 0.0
    log_prefix = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        # Series: P = e^-x x^a / Γ(a+1) · Σ x^n / ((a+1)…(a+n)).
        term = total = 1.0 / a
        denominator = a
        for _ in range(_MAX_ITER):
            denominator += 1.0
            term *= x / denominator
            total += term
            if abs(term) < abs(total) * _EPS:
                break
        return min(1.0, total * math.exp(log_prefix))
    # Continued fraction for Q = 1 - P, modified Lentz.
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return max(0.0, 1.0 - math.exp(log_prefix) * h)


def chi2_cdf(x: float, *, dof: float) -> float:
    """P(X ≤ x) for X ~ χ²(dof): P(dof/2, x/2)."""
    if dof <= 0:
        raise ValueError(f"chi-square degrees of freedom must be positive, got {dof}")
    return _gamma_p(dof / 2.0, x / 2.0)


def chi2_quantile(p: float, *, dof: float) -> float:
    """The x with P(X ≤ x) = p for X ~ χ²(dof), by bisection on the exact CDF.

    Bisection rather than Newton: the CDF is monotone, so a bracket always converges, and
    60-odd halvings cost nothing next to a database query.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile probability must be in (0, 1), got {p}")
    if dof <= 0:
        raise ValueError(f"chi-square degrees of freedom must be positive, got {dof}")
    low, high = 0.0, max(1.0, float(dof))
    while chi2_cdf(high, dof=dof) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if chi2_cdf(mid, dof=dof) < p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-13 * high:
            break
    return (low + high) / 2.0


# --- MTBF -----------------------------------------------------------------------------

def _exponential_ci95(*, failures: int, hours: float) -> list[float | None]:
    """Two-sided 95% interval for the mean of an exponential law, time-terminated test.

    Convention of the time-terminated (Type I censored) test, as in the NIST/SEMATECH
    e-Handbook of Statistical Methods and MIL-HDBK-781: with n failures in a fixed observed
    time T and χ²(p, k) the p-quantile of χ² with k degrees of freedom,
        low  = 2T / χ²(0.975, 2n + 2)      high = 2T / χ²(0.025, 2n).
    The extra 2 degrees of freedom in the lower bound account for the failure that would
    have come after the observation window closed. With n = 0 there is no upper bound
    (None: JSON has no infinity); the lower bound is still finite.
    """
    low = 2.0 * hours / chi2_quantile(0.975, dof=2 * failures + 2)
    high = 2.0 * hours / chi2_quantile(0.025, dof=2 * failures) if failures > 0 else None
    return [low, high]


def _check_counts(*, failures: int, hours: float, what: str) -> None:
    if isinstance(failures, bool) or not isinstance(failures, int) or failures < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {failures!r}")
    if not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours <= 0:
        raise ValueError(f"observed_hours must be a positive number, got {hours!r}")


def mtbf(*, interruptions: int, observed_hours: float) -> MTBF:
    """Mean time between interruptions T/n with its 95% chi-square interval.

    Assumes an exponential law (constant failure rate), the model SPEC §7 fixes; see
    `_exponential_ci95` for the interval's convention. n = 0 gives `mtbf_hours` None.
    """
    _check_counts(failures=interruptions, hours=observed_hours, what="interruptions")
    return {
        "interruptions": interruptions,
        "observed_hours": float(observed_hours),
        "mtbf_hours": observed_hours / interruptions if interruptions else None,
        "ci95": _exponential_ci95(failures=interruptions, hours=observed_hours),
    }


def unit_mtbf(
    *, units: int, observed_hours: float, failures: int, project_to: int | None = None
) -> UnitMTBF:
    """Per-unit MTBF = units × hours / failures, and the cluster MTBF it implies at size n.

    With independent units each failing at rate 1/M_unit, n units fail at rate n/M_unit, so
    a job on n of them sees M_unit / n (the usual scaling argument, e.g. Llama 3 §3.3.4).
    The interval is the exponential one on the pooled unit-hours.
    """
    if isinstance(units, bool) or not isinstance(units, int) or units <= 0:
        raise ValueError(f"units must be a positive integer, got {units!r}")
    if project_to is not None and (
        isinstance(project_to, bool) or not isinstance(project_to, int) or project_to <= 0
    ):
        raise ValueError(f"project_to must be a positive integer, got {project_to!r}")
    _check_counts(failures=failures, hours=observed_hours, what="failures")
    unit_hours = units * float(observed_hours)
    per_unit = unit_hours / failures if failures else None
    projected = per_unit / project_to if per_unit is not None and project_to else None
    return {
        "units": units,
        "failures": failures,
        "observed_hours": float(observed_hours),
        "unit_hours": unit_hours,
        "unit_mtbf_hours": per_unit,
        "ci95": _exponential_ci95(failures=failures, hours=unit_hours),
        "project_to": project_to,
        "projected_mtbf_hours": projected,
    }


# --- time between failures --------------------------------------------------------------

def weibull_fit(gaps: Sequence[float]) -> WeibullFit:
    """Maximum-likelihood Weibull shape k and scale λ of positive gaps.

    k solves the profile-likelihood equation (Cohen 1965, Technometrics 7(4)):
        Σ xᵢᵏ ln xᵢ / Σ xᵢᵏ − 1/k − mean(ln xᵢ) = 0,
    whose left side increases in k, so bisection on ln k always converges; then
    λ = (mean xᵢᵏ)^(1/k). The sums are taken in log space so large k cannot overflow.
    k < 1: a failure makes another soon more likely (failures cluster); k = 1: exponential;
    k > 1: wear-out.
    """
    if len(gaps) < 2 or any(not math.isfinite(g) or g <= 0 for g in gaps):
        raise ValueError("a Weibull fit needs at least two positive, finite gaps")
    logs = [math.log(g) for g in gaps]
    mean_log = math.fsum(logs) / len(logs)
    if max(logs) - min(logs) < 1e-12:
        raise ValueError("a Weibull fit needs gaps that are not all equal")

    def profile(k: float) -> float:
        top = max(k * lg for lg in logs)
        weights = [math.exp(k * lg - top) for lg in logs]
        return math.fsum(w * lg for w, lg in zip(weights, logs)) / math.fsum(weights) - 1.0 / k - mean_log

    low, high = math.log(1e-3), math.log(1e3)
    for _ in range(200):
        mid = (low + high) / 2.0
        if profile(math.exp(mid)) < 0:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    shape = math.exp((low + high) / 2.0)
    top = max(shape * lg for lg in logs)
    mean_power_log = top + math.log(math.fsum(math.exp(shape * lg - top) for lg in logs) / len(logs))
    return {"shape": shape, "scale_hours": math.exp(mean_power_log / shape), "gaps": len(gaps)}


def between_failures(times: Sequence[datetime], *, min_fit_gaps: int = 10) -> BetweenFailures:
    """The distribution of the gaps between successive failures, in hours.

    `count` is the number of gaps (failures − 1). Mean and median use every gap; the Weibull
    fit (see `weibull_fit`) uses the positive gaps only, because failures recorded at the
    same instant (batched removals, as in the Titan data) have no logarithm — `zero_gaps`
    says how many were left out — and is omitted below `min_fit_gaps` positive gaps.
    """
    if any(not isinstance(t, datetime) for t in times):
        raise ValueError("between_failures takes datetimes")
    if any(t.tzinfo is None for t in times) and any(t.tzinfo is not None for t in times):
        raise ValueError("between_failures cannot mix naive and zone-aware datetimes")
    ordered = sorted(times)
    gaps = [(b - a).total_seconds() / 3600.0 for a, b in zip(ordered, ordered[1:])]
    positive = [g for g in gaps if g > 0]
    fit = None
    if len(positive) >= max(2, min_fit_gaps):
        try:
            fit = weibull_fit(positive)
        except ValueError:
            fit = None  # all gaps equal: no shape to report
    return {
        "count": len(gaps),
        "mean_hours": statistics.fmean(gaps) if gaps else None,
        "median_hours": statistics.median(gaps) if gaps else None,
        "zero_gaps": len(gaps) - len(positive),
        "weibull": fit,
    }
