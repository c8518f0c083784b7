"""Randomness for private solvers: one ``numpy.random.Generator`` per fit.

Every random draw of a solver (noise, batches, permutations, random iterates) goes through
a :class:`NoiseSource`, so that tests can record and replay the exact sequence and so that
no solver ever touches numpy's global random state.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from skdp._docstrings import fill_docstrings
from skdp.losses import vector_norms

__all__ = ["NoiseSource", "as_generator", "as_noise_source"]


def as_generator(random_state: object) -> np.random.Generator:
    """Turn ``random_state`` into a fresh ``numpy.random.Generator``.

    ``None`` draws fresh OS entropy (never numpy's global state); an integer seeds a
    ``SeedSequence`` (reproducible, so the noise is known to anyone who knows the seed);
    a ``Generator`` is used as is; a legacy ``RandomState`` seeds a new generator from
    its stream.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        The source of randomness.

    Returns
    -------
    numpy.random.Generator
        The generator (``random_state`` itself when it is one).

    Raises
    ------
    ValueError
        If ``random_state`` is none of these.
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


#: The parameters of the draws, described once: a line ``<<name>>`` in the docstring of a
#: draw of :class:`NoiseSource` or of a subclass's override is replaced by the text of
#: ``name`` (:mod:`skdp._docstrings`); ``<<name_parameters>>`` is a whole Parameters
#: section.
DRAW_DOCS: dict[str, str] = {
    "shape": """\
shape : tuple of int
    Shape of the draw.
""",
    "sigma": """\
sigma : float
    Scale ``sigma >= 0`` of the noise (0 gives zeros).
""",
    "scale": """\
scale : float
    Scale of the noise, ``>= 0`` (0 gives zeros).
""",
    "r": """\
r : float
    Order of the norm, ``1 <= r <= inf``.
""",
    "q": """\
q : float
    Order of the norm ``l_q`` whose unit ball is ``K``, ``1 <= q <= inf``.
""",
    "count": """\
count : int
    Number of independent draws.
""",
    "count_none": """\
count : int or None, default=None
    Number of independent draws, stacked along a new first axis; ``None``: one draw of
    shape ``shape``.
""",
    "ball_product": """\
sizes : tuple of int
    Dimensions of the balls ``B_j`` (``>= 1``).
radii : tuple of float
    Their radii.
epsilon : float
    The privacy parameter (``inf`` gives zeros).
""",
    "n_children": """\
n_children : int
    Number of child streams.
""",
}
for _name, _entries in {"gaussian": ("shape", "sigma"), "scale": ("shape", "scale"),
                        "generalized_gaussian": ("shape", "sigma", "r"),
                        "k_norm": ("shape", "scale", "q", "count_none"),
                        "ball_product": ("ball_product",), "spawn": ("n_children",)}.items():
    DRAW_DOCS[f"{_name}_parameters"] = "Parameters\n----------\n" + "".join(
        DRAW_DOCS[entry] for entry in _entries)


def _check_order(r: float, name: str) -> None:
    if not (isinstance(r, int | float | np.integer | np.floating) and r >= 1):  # rejects nan
        raise ValueError(f"{name} must be a norm order >= 1 (or inf), got {r!r}.")


#: A call whose largest subset (or complement) has more than this many indices, and more
#: than ``n / _CHOICE_FRACTION`` of ``range(n)``, draws its rows one by one
#: (``Generator.choice``): duplicates are then frequent enough that the redraw rounds cost
#: more (measured, ns an index sorted / by choice: 3163 of 100000, 28 / 73; 6325 of
#: 200000, 29 / 61; 20000 of 200000, 48 / 42; 40000 of 100000, 231 / 34).
_SORT_LIMIT = 1024
_CHOICE_FRACTION = 16


def _check_count(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
        raise ValueError(f"count must be a non-negative int, got {count!r}.")
    return int(count)


class NoiseSource:
    """All random draws of one solver run.

    The batched methods (:meth:`generalized_gaussians`, :meth:`batches_without_replacement`,
    :meth:`poisson_batches`, ``k_norm(..., count=)``) draw many independent draws of one
    law in a single vectorised call. Each row has exactly the law of one single draw;
    only the order in which the generator's stream is consumed differs.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator every draw comes from.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __init_subclass__(cls, **kwargs: object) -> None:
        # A subclass's draws get the shared parameter descriptions (DRAW_DOCS) too.
        super().__init_subclass__(**kwargs)
        fill_docstrings(cls, DRAW_DOCS)

    def _overrides(self, name: str) -> bool:
        """Whether this source's class overrides the single-draw method ``name``: the
        batched method then calls it once per draw, so that recording or scaling
        subclasses see (and change) every draw."""
        return getattr(type(self), name) is not getattr(NoiseSource, name)

    def gaussian(self, shape: tuple[int, ...], sigma: float) -> np.ndarray:
        """Draw ``N(0, sigma^2)`` entries of the given shape (zeros when ``sigma == 0``).

        <<gaussian_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            I.i.d. Gaussian entries.
        """
        if sigma == 0:
            return np.zeros(shape)
        return sigma * self.rng.standard_normal(shape)

    def l2_laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """A draw with density proportional to ``exp(-||z||_2 / scale)`` on ``R^d``.

        ``d = prod(shape)``. In polar coordinates the density of the radius ``r`` is
        proportional to ``r^(d-1) exp(-r / scale)`` (the sphere's surface grows like
        ``r^(d-1)``): ``r ~ Gamma(shape=d, scale=scale)``, independent of a uniform
        direction (a normalised standard Gaussian). Zeros when ``scale == 0``.

        <<scale_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            The draw, ``E||z||_2 = d scale``.
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

    def ball_product_k_norm(
        self, sizes: tuple[int, ...], radii: tuple[float, ...], epsilon: float
    ) -> np.ndarray:
        """A draw with density proportional to ``exp(-epsilon ||z||_K)`` on ``R^m``.

        ``K = B_1 x ... x B_J`` is a product of Euclidean balls, ``B_j`` of dimension
        ``sizes[j]`` and radius ``radii[j]`` (``m = sum(sizes)``; ``z`` is the
        concatenation of its blocks ``z_j``), so ``||z||_K = max_j ||z_j||_2 / radii[j]``.
        The K-norm mechanism of Hardt & Talwar (2010): epsilon-DP for a query whose
        neighbouring differences lie in ``K``. One block is :meth:`l2_laplace` with scale
        ``radii[0] / epsilon``. Zeros when ``epsilon`` is ``inf``.

        <<ball_product_parameters>>

        Returns
        -------
        ndarray of shape (m,)
            The draw, its blocks concatenated.

        Raises
        ------
        ValueError
            If ``sizes`` and ``radii`` do not pair up or a size is below 1.

        Notes
        -----
        ``R ~ Gamma(m + 1, 1 / epsilon)`` and ``z`` uniform in ``R K`` has density
        ``int_{||z||_K}^inf e^(-epsilon r) epsilon^(m+1) r^m / m! / (r^m vol K) dr =
        epsilon^m e^(-epsilon ||z||_K) / (m! vol K)``. Uniform in ``R K`` = independent
        uniform points of the balls ``R B_j``: a uniform direction and radius
        ``R radii[j] U^(1/sizes[j])``, ``U ~ U(0, 1)``. ``E||z_j||^2 = sizes[j] /
        (sizes[j] + 2) radii[j]^2 (m + 1)(m + 2) / epsilon^2``.
        """
        if len(sizes) != len(radii) or not sizes or min(sizes) < 1:
            raise ValueError(f"sizes {sizes!r} and radii {radii!r} must pair up, sizes >= 1.")
        if epsilon == math.inf:
            return np.zeros(int(sum(sizes)))
        m = int(sum(sizes))
        radius = self.rng.gamma(shape=m + 1, scale=1.0 / epsilon)
        blocks = []
        for size, rho in zip(sizes, radii, strict=True):
            direction = self._cone_directions(1, int(size), 2.0)[0]
            blocks.append(radius * rho * self.rng.random() ** (1.0 / size) * direction)
        return np.concatenate(blocks)

    def release(self, mechanism: str, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """Draw the noise of a :func:`~skdp.privacy.accounting.single_release` mechanism.

        Parameters
        ----------
        mechanism : {"l2_laplace", "gaussian", "none"}
            ``"l2_laplace"`` of ``scale`` (:meth:`l2_laplace`), ``"gaussian"`` of std
            ``scale`` (:meth:`gaussian`), or zeros.
        <<shape>>
        <<scale>>

        Returns
        -------
        ndarray of shape ``shape``
            The draw.

        Raises
        ------
        ValueError
            If ``mechanism`` is unknown.
        """
        if mechanism == "l2_laplace":
            return self.l2_laplace(shape, scale)
        if mechanism == "gaussian":
            return self.gaussian(shape, scale)
        if mechanism == "none":
            return np.zeros(shape)
        raise ValueError(f"unknown release mechanism {mechanism!r}.")

    def laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """Draw i.i.d. ``Laplace(0, scale)`` entries, density ``exp(-|z|/scale) / (2 scale)``.

        <<scale_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            The entries (zeros when ``scale == 0``).
        """
        if scale == 0:
            return np.zeros(shape)
        return self.rng.laplace(0.0, scale, size=shape)

    def generalized_gaussian(self, shape: tuple[int, ...], sigma: float, r: float) -> np.ndarray:
        """A draw with density proportional to ``exp(-||z||_r^2 / (2 sigma^2))`` on ``R^d``.

        The generalized Gaussian of Bassily, Guzman & Nandi (2021) in the ``l_r`` norm
        (``d = prod(shape)``, ``1 <= r <= inf``); ``r = 2`` is ``N(0, sigma^2 I)``. Zeros
        when ``sigma == 0``.

        <<generalized_gaussian_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            The draw, ``E||z||_r^2 = d sigma^2``.

        Notes
        -----
        **Polar decomposition.** Let ``K`` be the unit ball of a norm ``||.||_K`` on ``R^d``
        and write ``z = rho u`` with ``rho = ||z||_K`` and ``u = z / rho`` on the sphere
        ``dK``. Lebesgue measure factorises as ``dz = d vol(K) rho^(d-1) drho dmu_K(u)``,
        where ``mu_K`` is the *cone measure* of ``dK`` (``mu_K(A) = vol({t a : a in A,
        0 <= t <= 1}) / vol(K)``). A density ``f(z) = g(||z||_K)`` therefore makes ``rho``
        and ``u`` independent, ``u ~ mu_K`` and ``rho`` with density proportional to
        ``rho^(d-1) g(rho)``. Here ``g(rho) = exp(-rho^2 / (2 sigma^2))``: the substitution
        ``s = rho^2 / (2 sigma^2)`` gives density ``s^(d/2 - 1) e^(-s)``, so
        ``rho = sigma sqrt(2 S)``, ``S ~ Gamma(d/2, 1)``, and ``E||Z||_r^2 = d sigma^2``.

        **The cone measure of the l_r sphere** (Schechtman & Zinn 1990; Rachev &
        Rueschendorf 1991). ``Y`` with i.i.d. coordinates of density proportional to
        ``exp(-|y|^r)`` (``scipy.stats.gennorm(beta=r)``) has joint density proportional to
        ``exp(-||y||_r^r)``, a function of ``||y||_r`` only: by the same factorisation
        ``Y / ||Y||_r ~ mu_K`` for the l_r ball, independent of ``||Y||_r``. The gennorm
        coordinates are drawn as ``sign * G^(1/r)`` with ``G ~ Gamma(1/r, 1)`` (``|Y|^r``
        has density proportional to ``s^(1/r - 1) e^(-s)``), computed as
        ``Gamma(1 + 1/r)^(1/r) U`` with ``U`` uniform on ``(0, 1]`` (the same law, without
        the underflow of ``Gamma(1/r)`` to 0 for large ``r``); for ``r = inf`` the coordinates
        are uniform on ``[-1, 1]`` (uniform on the cube, whose density is a function of
        ``||y||_inf``). Every draw comes from ``self.rng``.
        """
        _check_order(r, "r")
        return self._generalized_gaussians(shape, sigma, r, 1)[0]

    def generalized_gaussians(self, shape: tuple[int, ...], sigma: float, r: float,
                              count: int) -> np.ndarray:
        """``count`` independent :meth:`generalized_gaussian` draws, shape ``(count, *shape)``.

        Each row has exactly the law of one :meth:`generalized_gaussian` draw (the same
        polar decomposition, vectorised: ``count`` cone-measure directions, then ``count``
        radii ``sigma sqrt(2 S)``, ``S ~ Gamma(d/2, 1)``, all independent); the stream is
        consumed in another order than ``count`` single calls. A subclass that overrides
        :meth:`generalized_gaussian` (a recorder, the audit's under-noised twin) is
        honoured: the rows are then ``count`` calls to it.

        <<generalized_gaussian_parameters>>
        <<count>>

        Returns
        -------
        ndarray of shape ``(count, *shape)``
            One draw per row.
        """
        _check_order(r, "r")
        rows = _check_count(count)
        if self._overrides("generalized_gaussian"):
            return np.array([self.generalized_gaussian(shape, sigma, r) for _ in range(rows)]
                            ).reshape((rows, *shape))
        return self._generalized_gaussians(shape, sigma, r, rows)

    def _generalized_gaussians(self, shape: tuple[int, ...], sigma: float, r: float,
                               rows: int) -> np.ndarray:
        """The polar decomposition of :meth:`generalized_gaussian`, ``rows`` draws at once
        (one row is exactly one draw: the same calls on the stream)."""
        if sigma == 0:
            return np.zeros((rows, *shape))
        d = int(np.prod(shape))
        out = self._cone_directions(rows, d, r)
        radius = sigma * np.sqrt(2.0 * self.rng.gamma(shape=0.5 * d, scale=1.0, size=rows))
        out *= radius[:, None]
        return out.reshape((rows, *shape))

    def k_norm(
        self, shape: tuple[int, ...], scale: float, q: float, count: int | None = None
    ) -> np.ndarray:
        """A draw with density proportional to ``exp(-||z||_q / scale)`` on ``R^d``.

        The K-norm mechanism of Hardt & Talwar (2010) for ``K`` the unit ball of ``l_q``
        (``d = prod(shape)``, ``1 <= q <= inf``): with ``scale = Delta_K / epsilon`` and a
        query of ``||.||_q``-sensitivity ``Delta_K`` it is ``epsilon``-DP by the triangle
        inequality. ``q = 2`` is :meth:`l2_laplace`. Zeros when ``scale == 0``. With
        ``count``, ``count`` independent draws stacked along a new first axis (shape
        ``(count, *shape)``), drawn in one vectorised call.

        <<k_norm_parameters>>

        Returns
        -------
        ndarray of shape ``shape`` or ``(count, *shape)``
            The draw(s).

        Notes
        -----
        By the polar decomposition of :meth:`generalized_gaussian` with
        ``g(rho) = exp(-rho / scale)``, the radius ``||Z||_q`` has density proportional to
        ``rho^(d-1) exp(-rho / scale)``, i.e. ``Gamma(shape=d, scale=scale)``
        (``E||Z||_q = d scale``), independent of the direction ``Z / ||Z||_q``, which
        follows the cone measure of the l_q sphere: ``Y / ||Y||_q`` with ``Y_i`` i.i.d.
        ``gennorm(beta=q)`` (``U[-1, 1]`` for ``q = inf``).
        """
        _check_order(q, "q")
        rows = 1 if count is None else _check_count(count)
        out_shape = tuple(shape) if count is None else (rows, *shape)
        if scale == 0:
            return np.zeros(out_shape)
        d = int(np.prod(shape))
        direction = self._cone_directions(rows, d, q)
        radius = self.rng.gamma(shape=d, scale=scale, size=rows)
        direction *= radius[:, None]
        return direction.reshape(out_shape)

    def _cone_directions(self, rows: int, d: int, r: float) -> np.ndarray:
        """``rows`` independent points of the l_r unit sphere from its cone measure.

        The ``rows x d`` work arrays are filled in place (one array of magnitudes, one of
        uniforms), and the first pass's array is the output when no row is redrawn (the
        norms' temporaries aside, about three arrays of the output's size).
        """
        out = None
        todo = np.arange(rows)
        while todo.size:
            if r == math.inf:
                y = self.rng.uniform(-1.0, 1.0, size=(todo.size, d))
            else:
                # gennorm(beta=r): |Y|^r ~ Gamma(1/r, 1) and an independent random sign.
                # Gamma(a) = Gamma(1 + a) U^(1/a) in law (U uniform on (0, 1]), so
                # |Y| = Gamma(1 + 1/r)^(1/r) U. Drawing Gamma(1/r) directly underflows to
                # exactly 0 with probability ~10^(-323.6 / r) per coordinate (0.48 at
                # r = 1001): a noise coordinate of 0 releases that coordinate exactly.
                y = self.rng.gamma(shape=1.0 + 1.0 / r, scale=1.0, size=(todo.size, d))
                y **= 1.0 / r
                u = self.rng.random((todo.size, d))
                np.subtract(1.0, u, out=u)
                y *= u
                # The independent sign: U' < 1/2 with probability 1/2.
                self.rng.random(out=u)
                np.negative(y, out=y, where=u < 0.5)
                del u
            norms = vector_norms(y, r)
            ok = (norms > 0) & np.isfinite(norms)  # zero has probability zero: redraw
            if ok.all():
                y /= norms[:, None]
                if out is None:  # the first pass: y is the output
                    return y
                out[todo] = y
                break
            if out is None:
                out = np.empty((rows, d))
            out[todo[ok]] = y[ok] / norms[ok, None]
            todo = todo[~ok]
        return out

    def permutation(self, n: int) -> np.ndarray:
        """A uniform random permutation of ``range(n)`` (independent of the data).

        Parameters
        ----------
        n : int
            Length of the permutation.

        Returns
        -------
        ndarray of shape (n,)
            The permuted indices.
        """
        return self.rng.permutation(n)

    def batch_without_replacement(self, n: int, size: int) -> np.ndarray:
        """Draw a uniform subset of ``size`` distinct indices of ``range(n)``.

        Parameters
        ----------
        n : int
            The indices are drawn from ``range(n)``.
        size : int
            Number of indices, at most ``n``.

        Returns
        -------
        ndarray of shape (size,)
            The indices, in random order.
        """
        return self.rng.choice(n, size=size, replace=False)

    def batch_poisson(self, n: int, rate: float) -> np.ndarray:
        """Draw a Poisson batch: each index of ``range(n)`` independently with probability ``rate``.

        Parameters
        ----------
        n : int
            Every index of ``range(n)`` may be drawn.
        rate : float
            Inclusion probability, in ``[0, 1]``.

        Returns
        -------
        ndarray of int
            The included indices, increasing.
        """
        return np.flatnonzero(self.rng.random(n) < rate)

    def batches_without_replacement(self, n: int, size: int, count: int) -> np.ndarray:
        """``count`` independent uniform ``size``-subsets of ``range(n)``, one call.

        Returns an int array of shape ``(count, size)``; row ``t`` is the ``t``-th batch,
        sorted (a uniform subset, as :meth:`batch_without_replacement`, listed in
        increasing order: the order of a batch carries no information). A subclass that
        overrides :meth:`batch_without_replacement` is honoured (``count`` calls to it).
        See :meth:`_uniform_subsets` for the sampler and its proof.

        Parameters
        ----------
        n : int
            Each batch is drawn from ``range(n)``.
        size : int
            Batch size, in ``[0, n]``.
        <<count>>

        Returns
        -------
        ndarray of shape (count, size)
            One sorted batch per row.

        Raises
        ------
        ValueError
            If ``size`` is not in ``[0, n]`` or ``count`` is not a non-negative int.
        """
        rows = _check_count(count)
        if not 0 <= size <= n:
            raise ValueError(f"size must be in [0, n], got size={size!r}, n={n!r}.")
        if self._overrides("batch_without_replacement"):
            return np.array([self.batch_without_replacement(n, size) for _ in range(rows)],
                            dtype=np.intp).reshape(rows, size)
        return self._uniform_subsets(n, np.full(rows, size, dtype=np.intp))

    def poisson_batches(self, n: int, rate: float, count: int) -> list[np.ndarray]:
        """``count`` independent Poisson batches of ``range(n)`` at ``rate``, one call.

        Returns a list of ``count`` sorted index arrays. Each has exactly the law of
        :meth:`batch_poisson` (every index independently with probability ``rate``)
        without ``n`` uniforms per batch: a size ``m ~ Binomial(n, rate)``, then a uniform
        ``m``-subset. Proof: with independent inclusions, ``P(S = A) = rate^|A| (1 -
        rate)^(n - |A|)`` depends on ``A`` only through ``|A|``; so ``|S|`` is
        ``Binomial(n, rate)`` and, given ``|S| = m``, ``S`` is uniform over the
        ``C(n, m)`` subsets of size ``m`` (each has the same probability). Drawing the size
        and then a uniform subset of that size gives every ``A`` the probability
        ``P(|S| = |A|) / C(n, |A|) = rate^|A| (1 - rate)^(n - |A|)``: the same law. A
        subclass that overrides :meth:`batch_poisson` is honoured (``count`` calls to it).

        Parameters
        ----------
        n : int
            Each batch is a subset of ``range(n)``.
        rate : float
            Inclusion probability of every index, in ``[0, 1]``.
        <<count>>

        Returns
        -------
        list of ndarray of int
            ``count`` batches, each sorted.

        Raises
        ------
        ValueError
            If ``rate`` is not in ``[0, 1]`` or ``count`` is not a non-negative int.
        """
        rows = _check_count(count)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate!r}.")
        if self._overrides("batch_poisson"):
            return [self.batch_poisson(n, rate) for _ in range(rows)]
        sizes = self.rng.binomial(n, rate, size=rows).astype(np.intp)
        padded = self._uniform_subsets(n, sizes)
        return [padded[t, : sizes[t]] for t in range(rows)]

    def _uniform_subsets(self, n: int, sizes: np.ndarray) -> np.ndarray:
        """Independent uniform subsets of ``range(n)``, row ``t`` of size ``sizes[t]``.

        Returns ``subsets``: ``subsets[t, :sizes[t]]`` is the ``t``-th subset in
        increasing order (the rest of the row is padding, ``>= n``).

        Notes
        -----
        Row ``t`` draws ``k = sizes[t]`` i.i.d. uniform indices, then, while two of them
        are equal, keeps one copy of each distinct value and redraws the others
        (uniform, i.i.d.). The state is the set of distinct values kept plus fresh
        uniforms, so the procedure commutes with every relabelling ``pi`` of ``range(n)``:
        run on the draws ``pi(U)`` it returns ``pi(S)``, and ``pi(U)`` has the law of
        ``U`` (i.i.d. uniform). Hence ``pi(S)`` has the law of ``S`` for every ``pi``.
        Permutations act transitively on the subsets of size ``k``, so a law on them that
        every ``pi`` preserves gives each the same probability: ``S`` is uniform. Rows
        with ``k > n / 2`` draw the complement (uniform too), so every redraw is new
        with probability at least 1/2 and the expected number of rounds is
        ``O(log k)``. The number of draws is random but independent of any data.
        Duplicates are found on each row sorted (ties are adjacent; a redraw round
        re-sorts nearly sorted rows, for which a merge sort is fastest); the padding
        entries ``n + j`` are distinct and above every index. When the call's largest
        ``k`` exceeds :data:`_SORT_LIMIT` and ``n / _CHOICE_FRACTION``, every row uses
        ``Generator.choice`` (exact, uniform) instead.
        """
        rows = sizes.size
        comp = sizes > n // 2
        k = np.where(comp, n - sizes, sizes)
        width = int(k.max(initial=0))
        if width > _SORT_LIMIT and width * _CHOICE_FRACTION > n:
            # Large subsets of a small range: numpy's exact sampler per row is faster
            # than sorting (duplicates to redraw are frequent).
            full = int(sizes.max())
            out = np.empty((rows, full), dtype=np.intp)
            for t in range(rows):
                out[t, : sizes[t]] = np.sort(self.rng.choice(n, int(sizes[t]), replace=False))
                out[t, sizes[t]:] = n + np.arange(full - sizes[t])
            return out
        if width == 0:
            vals = np.empty((rows, 0), dtype=np.intp)
        else:
            col = np.arange(width, dtype=np.intp)
            pad = col[None, :] >= k[:, None]
            vals = self.rng.integers(0, n, size=(rows, width), dtype=np.intp)
            np.copyto(vals, n + col[None, :], where=pad)
            vals.sort(axis=1)
            todo = np.arange(rows)
            while todo.size and width > 1:
                sub = vals[todo]
                dup = sub[:, 1:] == sub[:, :-1]
                bad = dup.any(axis=1)
                if not bad.any():
                    break
                todo, sub, dup = todo[bad], sub[bad], dup[bad]
                # One copy of each value stays (the first of a run of ties), the others
                # are redrawn.
                sub[:, 1:][dup] = self.rng.integers(0, n, size=int(dup.sum()), dtype=np.intp)
                sub.sort(axis=1, kind="stable")  # nearly sorted: a merge sort is fastest
                vals[todo] = sub
        if comp.any():
            # k <= sizes on every row, so the complements fit in max(sizes) columns.
            full = int(sizes.max())
            out = np.empty((rows, full), dtype=np.intp)
            out[:, :width] = vals
            out[:, width:] = n + np.arange(width, full)
            for t in np.flatnonzero(comp):
                keep = np.ones(n, dtype=bool)
                keep[vals[t, : k[t]]] = False
                out[t, : sizes[t]] = np.flatnonzero(keep)
                out[t, sizes[t]:] = n + np.arange(full - sizes[t])
            vals = out
        return vals

    def integer(self, high: int) -> int:
        """Draw a uniform integer in ``[0, high)``.

        Parameters
        ----------
        high : int
            The exclusive upper end, ``>= 1``.

        Returns
        -------
        int
            The integer.
        """
        return int(self.rng.integers(high))

    def spawn(self, n_children: int) -> list[NoiseSource]:
        """Independent child streams (``SeedSequence.spawn``) for classes or workers.

        <<spawn_parameters>>

        Returns
        -------
        list of NoiseSource
            ``n_children`` sources whose streams are independent of this one's.
        """
        return [NoiseSource(child) for child in self.rng.spawn(n_children)]


def as_noise_source(random_state: object) -> NoiseSource:
    """A :class:`NoiseSource` from a seed, a generator, or a ``NoiseSource`` (as is).

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator, numpy.random.RandomState or NoiseSource
        The source of randomness (see :func:`as_generator`).

    Returns
    -------
    NoiseSource
        ``random_state`` itself when it is one, else a source on a fresh generator.
    """
    if isinstance(random_state, NoiseSource):
        return random_state
    return NoiseSource(as_generator(random_state))


fill_docstrings(NoiseSource, DRAW_DOCS)
