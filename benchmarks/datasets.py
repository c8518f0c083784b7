"""Synthetic stand-ins for the datasets of the DP-SVRG paper's experiments.

The UCI Covertype data used by Wang, Ye & Xu (NeurIPS 2017) cannot be downloaded in the
benchmark environment, so :func:`make_covertype_like` generates a dataset with the same
shape and column structure from a fixed seed.
"""

from __future__ import annotations

import numpy as np

from skdp._demo import PUBLIC_FEATURE_RANGES

__all__ = [
    "BREAST_CANCER_RANGES",
    "DIABETES_RANGES",
    "load_bundled",
    "make_lp_instance",
    "make_sparse_regression",
    "make_student_t",
    "COVERTYPE_QUANTITATIVE",
    "COVERTYPE_ROW_SCALE",
    "make_covertype_like",
]

#: The 10 quantitative Covertype columns and the PUBLIC constant each is divided by: the
#: natural range documented for the attribute (metres, degrees, hillshade index 0-255),
#: rounded up. These are properties of the measurement, not of the data.
COVERTYPE_QUANTITATIVE: tuple[tuple[str, float], ...] = (
    ("elevation", 4000.0),  # metres; Covertype range 1859-3858
    ("aspect", 360.0),  # degrees azimuth
    ("slope", 90.0),  # degrees
    ("horizontal_distance_to_hydrology", 1400.0),  # metres; range 0-1397
    ("vertical_distance_to_hydrology", 600.0),  # metres; range -173-601
    ("horizontal_distance_to_roadways", 7200.0),  # metres; range 0-7117
    ("hillshade_9am", 255.0),  # index 0-255
    ("hillshade_noon", 255.0),
    ("hillshade_3pm", 255.0),
    ("horizontal_distance_to_fire_points", 7200.0),  # metres; range 0-7173
)

_N_QUANT = len(COVERTYPE_QUANTITATIVE)
_N_WILDERNESS = 4
_N_SOIL = 40

#: Every preprocessed row is divided by this public constant: after scaling, each of the
#: 10 quantitative columns lies in [-1, 1] and exactly two one-hot entries (one wilderness
#: area, one soil type) equal 1, so ``||x||^2 <= 10 + 2 = 12`` before the division and
#: ``||x|| <= 1`` after it.
COVERTYPE_ROW_SCALE = float(np.sqrt(_N_QUANT + 2))

# Approximate class frequencies of the four wilderness areas in UCI Covertype
# (Rawah, Neota, Comanche Peak, Cache la Poudre) and their typical elevations (metres).
_WILDERNESS_P = np.array([0.449, 0.051, 0.436, 0.064])
_WILDERNESS_ELEVATION = np.array([3000.0, 3300.0, 2900.0, 2300.0])


def _hillshade(aspect_deg, slope_deg, sun_azimuth_deg, sun_zenith_deg):
    """Standard hillshade index (0-255) of a surface for a sun position."""
    a, s = np.deg2rad(aspect_deg), np.deg2rad(slope_deg)
    az, zen = np.deg2rad(sun_azimuth_deg), np.deg2rad(sun_zenith_deg)
    value = np.cos(zen) * np.cos(s) + np.sin(zen) * np.sin(s) * np.cos(az - a)
    return 255.0 * np.clip(value, 0.0, 1.0)


def make_covertype_like(n_samples: int = 200000, random_state: int = 0):
    """A binary, Covertype-shaped dataset with rows of l2 norm at most 1.

    Generation (all vectorised, deterministic given ``random_state``):

    * a wilderness area (4 categories, Covertype's frequencies) and, given it, a soil type
      (40 categories, a fixed random Dirichlet(0.3) profile per area), both one-hot;
    * 10 quantitative columns in Covertype's units and ranges: elevation (normal around
      an area-specific mean, sd 250 m), aspect (a mixture of a von Mises bump and a
      uniform), slope (gamma, mean 14 degrees), distances to hydrology / roadways / fire
      points (gamma), vertical distance to hydrology (correlated with the horizontal
      one), and the three hillshade indices computed from aspect and slope with the
      standard hillshade formula for a 9am, noon and 3pm sun, plus noise; every column
      clipped to its documented Covertype range;
    * the label ``y`` in {0, 1} drawn from a logistic model on the preprocessed features
      (elevation dominant, as in Covertype, plus smaller effects of slope, distances,
      hillshade, area and soil). The logit has standard deviation about 1.8 and the
      intercept balances the classes (about 49% positives); the Bayes accuracy is about
      0.74: moderately separable, not trivial.

    Preprocessing (FIXED and data-independent, so it costs no privacy): each quantitative
    column is divided by the public constant of :data:`COVERTYPE_QUANTITATIVE` (its
    natural range, e.g. elevation / 4000) and clipped to [-1, 1]; the one-hot columns are
    left as 0/1; then every row is divided by :data:`COVERTYPE_ROW_SCALE` ``= sqrt(12)``,
    which bounds every row's l2 norm by 1 (the paper's assumption ``||x|| <= 1``).

    Parameters
    ----------
    n_samples : int, default=200000
        Number of rows.
    random_state : int, default=0
        Seed of everything (data and labels).

    Returns
    -------
    X : ndarray of shape (n_samples, 54), float64, C-contiguous
        Columns: 10 quantitative, 4 wilderness areas, 40 soil types; ``||x_i|| <= 1``.
    y : ndarray of shape (n_samples,), float64
        Labels in {0.0, 1.0}.
    """
    n = int(n_samples)
    rng = np.random.default_rng(np.random.SeedSequence([20170611, int(random_state)]))

    # Categorical columns ---------------------------------------------------------------
    wild = rng.choice(_N_WILDERNESS, size=n, p=_WILDERNESS_P)
    soil_profiles = rng.dirichlet(np.full(_N_SOIL, 0.3), size=_N_WILDERNESS)
    soil_cdf = np.cumsum(soil_profiles, axis=1)
    soil_cdf[:, -1] = 1.0
    u = rng.random(n)
    # Inverse-CDF sampling of the soil type given the area: count cdf entries below u.
    soil = np.minimum((u[:, None] > soil_cdf[wild]).sum(axis=1), _N_SOIL - 1)

    # Quantitative columns (Covertype units) ---------------------------------------------
    elevation = np.clip(_WILDERNESS_ELEVATION[wild] + 250.0 * rng.standard_normal(n),
                        1859.0, 3858.0)
    bump = rng.random(n) < 0.6
    aspect = np.where(
        bump,
        np.rad2deg(rng.vonmises(np.deg2rad(60.0), 1.0, n)) % 360.0,
        360.0 * rng.random(n),
    )
    slope = np.clip(rng.gamma(3.0, 14.0 / 3.0, n), 0.0, 66.0)
    hdh = np.clip(rng.gamma(1.3, 270.0 / 1.3, n), 0.0, 1397.0)
    vdh = np.clip(0.17 * hdh + 45.0 * rng.standard_normal(n), -173.0, 601.0)
    hdr = np.clip(rng.gamma(2.0, 2350.0 / 2.0, n), 0.0, 7117.0)
    hs9 = np.clip(_hillshade(aspect, slope, 100.0, 45.0) + 8.0 * rng.standard_normal(n),
                  0.0, 254.0)
    hs12 = np.clip(_hillshade(aspect, slope, 180.0, 25.0) + 8.0 * rng.standard_normal(n),
                   0.0, 254.0)
    hs3 = np.clip(_hillshade(aspect, slope, 260.0, 50.0) + 8.0 * rng.standard_normal(n),
                  0.0, 254.0)
    hdf = np.clip(rng.gamma(2.0, 1980.0 / 2.0, n), 0.0, 7173.0)
    raw = np.column_stack([elevation, aspect, slope, hdh, vdh, hdr, hs9, hs12, hs3, hdf])

    # Fixed, public preprocessing -----------------------------------------------------------
    scales = np.array([s for _, s in COVERTYPE_QUANTITATIVE])
    X = np.zeros((n, _N_QUANT + _N_WILDERNESS + _N_SOIL))
    X[:, :_N_QUANT] = np.clip(raw / scales, -1.0, 1.0)
    rows = np.arange(n)
    X[rows, _N_QUANT + wild] = 1.0
    X[rows, _N_QUANT + _N_WILDERNESS + soil] = 1.0
    X /= COVERTYPE_ROW_SCALE

    # Labels from a logistic model on the preprocessed features ------------------------------
    q = X[:, :_N_QUANT] * COVERTYPE_ROW_SCALE  # the scaled quantitative columns
    beta_quant = np.array([18.0, 0.4, -3.0, -1.5, 1.0, 0.8, 1.2, -0.8, 0.6, 0.5])
    beta_wild = np.array([0.4, -0.6, 0.2, -1.0])
    beta_soil = rng.normal(0.0, 0.8, _N_SOIL)
    logit = q @ beta_quant + beta_wild[wild] + beta_soil[soil]
    logit -= np.median(logit)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float64)
    return np.ascontiguousarray(X), y


# Bundled data with PUBLIC feature bounds ------------------------------------------------

#: Published ranges of the 30 breast-cancer features (Wisconsin Diagnostic data set
#: description), used as public bounds by ``PublicBoundsScaler``: the demo's constants,
#: one copy.
BREAST_CANCER_RANGES = PUBLIC_FEATURE_RANGES

#: Physiological ranges of the 10 raw diabetes features (``load_diabetes(scaled=False)``):
#: age (years), sex (1/2), bmi, mean blood pressure (mm Hg), total cholesterol, LDL, HDL
#: (mg/dL), cholesterol/HDL ratio, log triglycerides, blood sugar (mg/dL).
DIABETES_RANGES = np.array([
    (0.0, 100.0), (1.0, 2.0), (10.0, 60.0), (40.0, 160.0), (50.0, 400.0), (20.0, 300.0),
    (10.0, 120.0), (1.0, 12.0), (3.0, 7.0), (40.0, 200.0),
])
#: The documented range of the diabetes target (disease progression, 25-346).
DIABETES_Y_RANGE = (25.0, 346.0)


def load_bundled(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Breast cancer (labels 0/1) or diabetes (target mapped to [-1, 1] by its public range),
    features mapped to [-1, 1] by :class:`skdp.preprocessing.PublicBoundsScaler`."""
    from sklearn.datasets import load_breast_cancer, load_diabetes

    from skdp.preprocessing import PublicBoundsScaler

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        bounds = BREAST_CANCER_RANGES
    else:
        X, y = load_diabetes(return_X_y=True, scaled=False)
        bounds = DIABETES_RANGES
        lo, hi = DIABETES_Y_RANGE
        y = np.clip((y - 0.5 * (lo + hi)) / (0.5 * (hi - lo)), -1.0, 1.0)
    scaler = PublicBoundsScaler(bounds=(bounds[:, 0], bounds[:, 1]))
    return scaler.fit_transform(X), y.astype(np.float64)


# Synthetic regression ------------------------------------------------------------------

def make_sparse_regression(n_samples: int, n_features: int, random_state: int = 0,
                           n_informative: int = 10, density: float = 0.01,
                           noise: float = 0.1, label_bound: float = 1.5):
    """Sparse high-dimensional regression in CSR (rows bounded by 1 in l-infinity).

    The first ``n_informative`` columns are dense Rademacher, the others non-zero with
    probability ``density`` and then uniform on [-1, 1]. ``w*`` has ``n_informative``
    entries ``+-0.1`` (``||w*||_1 = 1`` for 10), ``y = <w*, x> + N(0, noise^2)`` clipped to
    ``[-label_bound, label_bound]``.

    Returns
    -------
    X : csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(np.random.SeedSequence([4, int(random_state)]))
    k, m = n_informative, n_features - n_informative
    dense = sp.csr_matrix(rng.choice([-1.0, 1.0], size=(n_samples, k)))
    nnz = int(rng.binomial(m * n_samples, density))
    rest = sp.csr_matrix((rng.uniform(-1.0, 1.0, nnz), (rng.integers(0, n_samples, nnz),
                                                         rng.integers(0, m, nnz))),
                         shape=(n_samples, m))
    rest.sum_duplicates()
    np.clip(rest.data, -1.0, 1.0, out=rest.data)
    X = sp.hstack([dense, rest], format="csr")
    w = np.zeros(n_features)
    w[:k] = rng.choice([-1.0, 1.0], k) / k
    y = np.clip(X @ w + noise * rng.standard_normal(n_samples), -label_bound, label_bound)
    return X, y


def make_student_t(n_samples: int, n_features: int = 50, random_state: int = 0,
                   df: float = 2.5):
    """Heavy-tailed regression: i.i.d. Student-t(``df``) features and noise (finite
    variance, infinite fourth moment for ``df = 2.5``), ``theta`` with 5 non-zeros.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    """
    rng = np.random.default_rng(np.random.SeedSequence([5, int(random_state)]))
    theta = np.zeros(n_features)
    theta[:5] = [1.0, -1.0, 0.5, -0.5, 0.25]
    X = rng.standard_t(df, size=(n_samples, n_features))
    return X, X @ theta + rng.standard_t(df, size=n_samples)


def make_lp_instance(n_samples: int, n_features: int, p: float, random_state: int = 0):
    """The rank-one instance on which the ``d^(1 - 2/p)`` factor of Su, Zhao & Wang's
    phased DP-SGD bound is attained: rows ``x_i = t_i e`` with ``e_j = s_j d^(-1/q)``
    (``||x_i||_q = |t_i| <= 1``, ``q = p / (p - 1)``), ``t_i ~ U[-1, 1]``, labels
    ``y_i = t_i + U[-1/2, 1/2]``. The population risk of ``w`` depends on ``<w, e>`` only
    and is minimal at ``<w, e> = 1``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    e : ndarray of shape (n_features,)
    """
    rng = np.random.default_rng(np.random.SeedSequence([6, int(random_state)]))
    q = p / (p - 1.0)
    e = rng.choice([-1.0, 1.0], size=n_features) * n_features ** (-1.0 / q)
    t = rng.uniform(-1.0, 1.0, size=n_samples)
    return np.outer(t, e), t + rng.uniform(-0.5, 0.5, size=n_samples), e
