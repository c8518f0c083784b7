"""Privacy primitives: budget validation, accounting, calibration and noise."""

from skdp.privacy.accounting import (
    ACCOUNTANTS,
    RELATIONS,
    GaussianAccountant,
    PrivacyLedger,
    PrivacySpent,
    PureDpAccountant,
    PureDpEvent,
    add_remove_budget,
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_event,
    gaussian_log_delta,
    gaussian_noise_multiplier,
    make_accountant,
    subsampled_gaussian_event,
)
from skdp.privacy.budget import Budget, check_budget
from skdp.privacy.noise import NoiseSource, as_generator, as_noise_source

__all__ = [
    "ACCOUNTANTS",
    "RELATIONS",
    "Budget",
    "GaussianAccountant",
    "NoiseSource",
    "PrivacyLedger",
    "PrivacySpent",
    "PureDpAccountant",
    "PureDpEvent",
    "add_remove_budget",
    "analytic_gaussian_multiplier",
    "as_generator",
    "as_noise_source",
    "calibrate_noise_multiplier",
    "check_budget",
    "epsilon_spent",
    "gaussian_event",
    "gaussian_log_delta",
    "gaussian_noise_multiplier",
    "make_accountant",
    "subsampled_gaussian_event",
]
