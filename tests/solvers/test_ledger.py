"""The ledger describes exactly the noisy releases that ran (count, scale, sampling)."""

import numpy as np
import pytest
from dp_accounting import dp_event as dpe

from skdp.privacy import Budget
from skdp.solvers import DPSVRG, DPSVRGPlusPlus, NoisyGD
from tests.conftest import RecordingNoiseSource, make_problem


def _gaussian_releases(event, count=1):
    """(noise multiplier, count, sampled) for every Gaussian release in an event tree."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        return _gaussian_releases(event.event, count * event.count)
    if isinstance(event, dpe.ComposedDpEvent):
        return [r for e in event.events for r in _gaussian_releases(e, count)]
    if isinstance(event, dpe.SampledWithoutReplacementDpEvent | dpe.PoissonSampledDpEvent):
        return [(z, c, event) for z, c, _ in _gaussian_releases(event.event, count)]
    if isinstance(event, dpe.GaussianDpEvent):
        return [(event.noise_multiplier, count, None)]
    raise AssertionError(f"unexpected event {event}")


def _draw_scales(draws):
    """One empirical scale per noisy release; a (steps, P, K) draw is a block of steps."""
    scales = []
    for kind, v in draws:
        if kind == "gaussian":
            scales += [float(np.std(step)) for step in (v if v.ndim == 3 else [v])]
    return scales


@pytest.mark.parametrize("accounting", ["gaussian", "rdp", "pld"])
def test_gd_ledger_matches_the_run(accounting):
    problem = make_problem(n=80, d=400)
    noise = RecordingNoiseSource(np.random.default_rng(0))
    res = NoisyGD(n_iter=7).solve(problem, Budget(1.0, 1e-5), noise, accounting=accounting)
    s = res.plan
    (z, count, sampled), = _gaussian_releases(res.ledger.event)
    assert count == 7 == len(_draw_scales(noise.draws)) and sampled is None
    factor = 2.0 if accounting == "pld" else 1.0  # PLD replace-one convention
    assert z * s.sensitivity / factor == pytest.approx(s.sigma, rel=1e-12)
    # Each release draws N(0, sigma^2) on every coordinate (401 of them): 10% is > 3 sd.
    assert np.allclose(_draw_scales(noise.draws), s.sigma, rtol=0.15)


@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus])
@pytest.mark.parametrize("sampling", ["without_replacement", "poisson"])
def test_svrg_ledger_matches_the_run(cls, sampling):
    problem = make_problem(n=120, d=400, alpha=0.05)
    solver = cls(n_epochs=3, inner_steps=2, batch_size=12, sampling=sampling)
    noise = RecordingNoiseSource(np.random.default_rng(1))
    res = solver.solve(problem, Budget(2.0, 1e-5), noise)
    s = res.plan
    poisson = sampling == "poisson"
    assert res.ledger.via_add_remove == poisson and res.ledger.relation == "replace_one"
    # Sensitivities: replace-one 2G/n and 2C/b; Poisson (add/remove, group privacy) G/n, C/b.
    factor = 1.0 if poisson else 2.0
    assert s.sensitivity_snapshot == pytest.approx(factor * s.clip_norm / 120)
    assert s.sensitivity_inner == pytest.approx(factor * s.correction_clip / 12)
    releases = _gaussian_releases(res.ledger.event)
    snapshots = [r for r in releases if r[2] is None]
    inner = [r for r in releases if r[2] is not None]
    lengths = s.epoch_lengths
    # One snapshot release per epoch, sum(m_s) subsampled inner releases.
    assert len(snapshots) == len(lengths) and all(c == 1 for _, c, _ in snapshots)
    (z_in, count_in, sampled), = inner
    assert count_in == sum(lengths) == res.n_iter
    if sampling == "without_replacement":
        assert isinstance(sampled, dpe.SampledWithoutReplacementDpEvent)
        assert (sampled.source_dataset_size, sampled.sample_size) == (120, 12)
    else:
        assert sampled.sampling_probability == pytest.approx(12 / 120)
    assert z_in * s.sensitivity_inner == pytest.approx(s.sigma_inner, rel=1e-12)
    for (z, _, _), sigma in zip(snapshots, s.sigma_snapshots, strict=True):
        assert z * s.sensitivity_snapshot == pytest.approx(sigma, rel=1e-12)
    # The run drew exactly these releases, in order, with these scales.
    scales = _draw_scales(noise.draws)
    expected = []
    for m, sigma in zip(lengths, s.sigma_snapshots, strict=True):
        expected += [sigma] + [s.sigma_inner] * m
    assert len(scales) == len(expected)
    assert np.allclose(scales, expected, rtol=0.15)
    batches = [v for kind, v in noise.draws if kind == "batch"]
    assert len(batches) == sum(lengths)
    if sampling == "without_replacement":
        assert all(len(b) == 12 == len(set(b.tolist())) for b in batches)
