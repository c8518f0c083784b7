"""Randomness for private solvers: one ``numpy.random.Generator`` per fit.

Every random draw of a solver (noise, batches, permutations, random iterates) goes through
a :class:`NoiseSource`, so that tests can record and replay the exact sequence and so that
no solver ever touches numpy's global random state.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["NoiseSource", "as_generator", "as_noise_source"]


def as_generator(random_state: object) -> np.random.Generator:
    """Turn ``random_state`` into a fresh ``numpy.random.Generator``.

    ``None`` draws fresh OS entropy (never numpy's global state); an integer seeds a
    ``SeedSequence`` (reproducible, so the noise is known to anyone who knows the seed);
    a ``Generator`` is used as is; a legacy ``RandomState`` seeds a new generator from
    its stream.
    """
    if random_state is None:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence()))
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(random_state))))
    if isinstance(random_state, np.random.RandomState):
        seed = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed.tolist())))
    raise ValueError(
        f"random_state must be None, an int, a numpy Generator or RandomState, got "
        f"{random_state!r}."
    )


class NoiseSource:
    """All random draws of one solver run.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator every draw comes from.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def gaussian(self, shape: tuple[int, ...], sigma: float) -> np.ndarray:
        """``N(0, sigma^2)`` entries of the given shape (zeros when ``sigma == 0``)."""
        if sigma == 0:
            return np.zeros(shape)
        return sigma * self.rng.standard_normal(shape)

    def l2_laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """A draw with density proportional to ``exp(-||z||_2 / scale)`` on ``R^d``.

        ``d = prod(shape)``. In polar coordinates the density of the radius ``r`` is
        proportional to ``r^(d-1) exp(-r / scale)`` (the sphere's surface grows like
        ``r^(d-1)``): ``r ~ Gamma(shape=d, scale=scale)``, independent of a uniform
        direction (a normalised standard Gaussian). Zeros when ``scale == 0``.
        """
        if scale == 0:
            return np.zeros(shape)
        d = int(np.prod(shape))
        direction = self.rng.standard_normal(d)
        norm = np.linalg.norm(direction)
        while norm == 0.0:  # probability zero; redraw rather than divide by zero
            direction = self.rng.standard_normal(d)
            norm = np.linalg.norm(direction)
        radius = self.rng.gamma(shape=d, scale=scale)
        return (radius / norm * direction).reshape(shape)

    def laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """I.i.d. ``Laplace(0, scale)`` entries (density ``exp(-|z|/scale) / (2 scale)``)."""
        if scale == 0:
            return np.zeros(shape)
        return self.rng.laplace(0.0, scale, size=shape)

    def permutation(self, n: int) -> np.ndarray:
        """A uniform random permutation of ``range(n)`` (independent of the data)."""
        return self.rng.permutation(n)

    def batch_without_replacement(self, n: int, size: int) -> np.ndarray:
        """A uniform subset of ``size`` distinct indices of ``range(n)``."""
        return self.rng.choice(n, size=size, replace=False)

    def batch_poisson(self, n: int, rate: float) -> np.ndarray:
        """Each index of ``range(n)`` independently with probability ``rate``."""
        return np.flatnonzero(self.rng.random(n) < rate)

    def integer(self, high: int) -> int:
        """A uniform integer in ``[0, high)``."""
        return int(self.rng.integers(high))

    def spawn(self, n_children: int) -> list[NoiseSource]:
        """Independent child streams (``SeedSequence.spawn``) for classes or workers."""
        return [NoiseSource(child) for child in self.rng.spawn(n_children)]


def as_noise_source(random_state: object) -> NoiseSource:
    """A :class:`NoiseSource` from a seed, a generator, or a ``NoiseSource`` (as is)."""
    if isinstance(random_state, NoiseSource):
        return random_state
    return NoiseSource(as_generator(random_state))
