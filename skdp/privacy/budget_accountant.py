"""A privacy budget the user owns, shared by every fit of a scikit-learn workflow.

See docs/tuning_and_budgets.md for the composition argument and the design choices.
"""

from __future__ import annotations

import html
import json
import math
import os
import sqlite3
import threading
import uuid
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from skdp._repr import dataclass_repr
from skdp.exceptions import BudgetError
from skdp.privacy.accounting import PrivacyLedger, PrivacySpent
from skdp.privacy.budget import Budget
from skdp.privacy.composition import (
    CompositeLedger,
    LedgerSummary,
    Totals,
    event_from_dict,
    event_to_dict,
    summarize,
)

__all__ = ["BudgetAccountant", "BudgetEntry", "SharedReference"]

_FORMAT = "skdp.BudgetAccountant/1"
# A split delta (d1 + d2 computed from delta) is forgiven its rounding, as in PrivacySpent.
_DELTA_ROUNDING = 1e-12


@dataclass(frozen=True)
class BudgetEntry:
    """One recorded release: what ran, who ran it, with which public parameters, and when.

    Parameters
    ----------
    index : int
        Position in the accountant (0-based, in the order of recording).
    id : int
        Stable identifier (what :meth:`BudgetAccountant.charge` returned).
    timestamp : str
        UTC time of recording (ISO 8601).
    source : str
        The class that ran (``"DPLogisticRegression"``, ``"PrivateRandomizedSearch"``).
    params : dict
        Its public parameters (the seed is never recorded).
    ledger : PrivacyLedger
        The dp_accounting event of the release, its accounting method and relation.
    spent : PrivacySpent
        The entry's own ``(epsilon, delta)``, from re-accounting ``ledger``.
    """

    index: int
    id: int
    timestamp: str
    source: str
    params: dict
    ledger: PrivacyLedger
    spent: PrivacySpent

    def __repr__(self) -> str:
        # Floats (in the parameters and the ledger too) rounded for reading.
        return dataclass_repr(self)


def _ledger_to_dict(ledger: PrivacyLedger | CompositeLedger) -> dict:
    if isinstance(ledger, CompositeLedger):
        return {"parts": [[name, _ledger_to_dict(part)] for name, part in ledger.parts],
                "budget": [ledger.budget.epsilon, ledger.budget.delta]}
    # "accountant" repeats the method for readers older than the rename (they read only it).
    return {"event": event_to_dict(ledger.event), "accounting": ledger.accounting,
            "accountant": ledger.accounting, "relation": ledger.relation,
            "budget": [ledger.budget.epsilon, ledger.budget.delta],
            "via_add_remove": ledger.via_add_remove}


def _ledger_from_dict(d: Mapping) -> PrivacyLedger | CompositeLedger:
    if "parts" in d:
        return CompositeLedger(tuple((name, _ledger_from_dict(part)) for name, part in
                                     d["parts"]),
                               Budget(float(d["budget"][0]), float(d["budget"][1])))
    # Records written before the accounting method's key was renamed hold "accountant".
    accounting = d["accounting"] if "accounting" in d else d["accountant"]
    return PrivacyLedger(event_from_dict(d["event"]), accounting, d["relation"],
                         Budget(float(d["budget"][0]), float(d["budget"][1])),
                         bool(d.get("via_add_remove", False)))


def _public_value(value: Any) -> Any:
    """A JSON-ready stand-in for a parameter value (its repr when not a plain value)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return repr(value)


def public_params(params: Mapping[str, Any]) -> dict:
    """Parameters fit to record: the seed and the accountant itself are left out."""
    return {k: _public_value(v) for k, v in sorted(params.items())
            if not (k == "random_state" or k.endswith("__random_state")
                    or k == "accountant" or k.endswith("__accountant"))}


def _check_ceiling(epsilon: Any, delta: Any) -> tuple[float, float]:
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BudgetError(f"BudgetAccountant {name} must be a real number, got {value!r}.")
    eps, dlt = float(epsilon), float(delta)
    if not eps > 0:
        raise BudgetError(f"BudgetAccountant epsilon must be > 0 (inf: no ceiling), got {eps}.")
    if not 0.0 <= dlt <= 1.0:
        raise BudgetError(f"BudgetAccountant delta must be in [0, 1], got {dlt}.")
    return eps, dlt


class SharedReference:
    """An object that ``clone``, ``copy`` and ``deepcopy`` return as is.

    A budget (or a budget cap) must stay one object however often scikit-learn copies
    its holders.
    """

    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class BudgetAccountant(SharedReference):
    """A privacy budget with a hard ceiling, shared by every fit that is given it.

    Pass it as ``accountant=`` to skdp estimators, transformers and searches. Every
    ``fit`` records its ledger (dp_accounting events, never bare ``(epsilon, delta)``
    pairs) with the class, public parameters and a time stamp. Before a fit reads any
    value of ``X``, the accountant checks that the composed total of its entries plus
    the new ledger stays within ``(epsilon, delta)``; the check and the recording are one
    atomic step, and a fit that would pass the ceiling raises
    :class:`~skdp.exceptions.BudgetError` and records nothing. A fit that fails later
    takes its entry back (nothing was released).

    The total composes all entries (sequential composition: fits on overlapping data,
    cross-validation folds included) with the tightest applicable bound: the exact
    Gaussian (GDP) composition, Renyi-DP composition, or basic composition (see
    :mod:`skdp.privacy.composition` and docs/tuning_and_budgets.md). Its delta is the sum
    of the entries' deltas.

    Parameters
    ----------
    epsilon : float, optional
        Ceiling on the total epsilon (``inf``: count without a ceiling). Required for a new
        accountant; with ``path`` of an existing file it is read from the file (and, if
        given, must agree with it).
    delta : float, default=0.0
        Ceiling on the total delta. The default admits pure-DP fits only: set for example
        ``delta=1e-5`` for Gaussian solvers.
    path : str or os.PathLike, optional
        A SQLite file that holds the entries (created if missing, reopened otherwise). It
        is shared by processes: ``n_jobs > 1`` in scikit-learn (loky workers unpickle the
        accountant and reopen the file), restarts and other programs. Without ``path``
        the entries live in this object only; a pickled copy of it (as sent to a process
        worker) refuses to record and names ``path``, so nothing is under-counted.
    stop_at_ceiling : bool, default=True
        Once the accountant refuses a charge (its ceiling would be passed), it refuses
        every later one until :meth:`resume` is called: a scikit-learn search that
        reaches the ceiling then stops with :class:`~skdp.exceptions.BudgetError` at its
        refit (or with "all fits failed") instead of choosing among the fits that ran.
        The refusal records no entry and reads no data; only this flag changes (on file,
        for every process). ``False``: each charge is judged on its own.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import cross_val_score
    >>> from skdp import BudgetAccountant, DPLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> acc = BudgetAccountant(epsilon=10.0, delta=1e-4)
    >>> clf = DPLogisticRegression(epsilon=1.0, data_norm=3000.0, accountant=acc)
    >>> _ = cross_val_score(clf, X, y, cv=3)
    >>> len(acc), acc.spent().epsilon < 3.0
    (3, True)
    """

    def __init__(self, epsilon=None, delta=0.0, *, path=None, stop_at_ceiling=True):
        self._lock = threading.RLock()
        self._detached = False
        self._stop_at_ceiling = bool(stop_at_ceiling)
        self._stopped = False
        self._path = None if path is None else os.fspath(path)
        if self._path is None:
            if epsilon is None:
                raise BudgetError("BudgetAccountant needs epsilon (or the path of an "
                                  "existing accountant file to reopen).")
            self._epsilon, self._delta = _check_ceiling(epsilon, delta)
            self._entries: list[tuple[BudgetEntry, LedgerSummary]] = []
            self._totals = Totals()
            self._next_id = 0
            return
        # Absolute, so that a copy unpickled in another working directory finds it.
        self._path = os.path.abspath(self._path)
        self._epsilon, self._delta, self._uid = self._open_file(epsilon, delta, create=True)

    # -- ceiling -------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Ceiling on the total epsilon."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """Ceiling on the total delta."""
        return self._delta

    @property
    def path(self) -> str | None:
        """The SQLite file, or ``None`` for an in-memory accountant."""
        return self._path

    # -- pickling (clone and copies return self: SharedReference) ------------------------
    def __getstate__(self) -> dict:
        if self._path is not None:
            return {"path": self._path, "epsilon": self._epsilon, "delta": self._delta,
                    "uid": self._uid, "stop_at_ceiling": self._stop_at_ceiling}
        with self._lock:
            return {"path": None, "epsilon": self._epsilon, "delta": self._delta,
                    "entries": list(self._entries), "totals": self._totals,
                    "next_id": self._next_id, "stop_at_ceiling": self._stop_at_ceiling,
                    "stopped": self._stopped}

    def __setstate__(self, state: dict) -> None:
        self._lock = threading.RLock()
        self._path = state["path"]
        self._epsilon, self._delta = state["epsilon"], state["delta"]
        self._stop_at_ceiling = state.get("stop_at_ceiling", True)
        self._stopped = state.get("stopped", False)
        if self._path is not None:
            self._detached = False
            # Reopen, never create: a missing file (another machine, a moved file) would
            # otherwise start an empty accountant and under-count.
            *_, uid = self._open_file(self._epsilon, self._delta, create=False)
            if uid != state["uid"]:
                raise BudgetError(f"{self._path!r} holds another accountant than the one "
                                  "that was pickled; refusing to record there.")
            self._uid = uid
            return
        # An unpickled in-memory accountant is a copy: what it recorded would not reach
        # the original (joblib's process workers unpickle one copy per task).
        self._detached = True
        self._entries = list(state["entries"])
        self._totals = state["totals"]
        self._next_id = state["next_id"]

    # -- recording -------------------------------------------------------------------------
    def charge(self, ledger: PrivacyLedger | CompositeLedger, *, source: str,
               params: Mapping[str, Any] | None = None) -> int:
        """Check the ceiling and record ``ledger`` in one atomic step.

        Called by every fit given this accountant, before any value of the data is read.

        Parameters
        ----------
        ledger : PrivacyLedger
            What the fit will run (from its public plan).
        source : str
            The class that runs it.
        params : mapping, optional
            Its public parameters (the seed is dropped).

        Returns
        -------
        int
            The entry's stable id (for :meth:`refund` if the fit fails before releasing).

        Raises
        ------
        BudgetError
            If the composed total would pass ``(epsilon, delta)``; nothing is recorded.
        """
        if self._detached:
            raise BudgetError(
                "this BudgetAccountant is a pickled copy of an in-memory accountant (for "
                "example sent to a process worker by n_jobs > 1): what it records would "
                "not reach the original. Use BudgetAccountant(epsilon, delta, path="
                "'budget.sqlite') for process-parallel fits, or n_jobs=1."
            )
        summary = summarize(ledger)
        params = public_params(params or {})
        stamp = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        if self._path is not None:
            try:
                return self._charge_file(ledger, summary, source, params, stamp)
            except BudgetError:
                self._stop()
                raise
        with self._lock:
            self._check_not_stopped(summary)
            totals = self._totals.plus(summary)
            try:
                self._check_within(totals, summary)
            except BudgetError:
                self._stop()
                raise
            entry = BudgetEntry(len(self._entries), self._next_id, stamp, source, params,
                                ledger, PrivacySpent(summary.epsilon, summary.delta))
            self._next_id += 1
            self._entries.append((entry, summary))
            self._totals = totals
            return entry.id

    # -- stopping at the ceiling ------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        """Whether the accountant refused a charge and refuses every later one.

        See ``stop_at_ceiling``; :meth:`resume` clears it.
        """
        if self._path is None:
            return self._stopped
        with self._transaction(write=False) as con:
            return self._stored_stopped(con)

    def resume(self) -> None:
        """Accept charges again after a refusal (each is checked against the ceiling)."""
        if self._path is None:
            with self._lock:
                self._stopped = False
            return
        with self._transaction() as con:
            con.execute("DELETE FROM meta WHERE key='stopped'")

    def _stop(self) -> None:
        if not self._stop_at_ceiling:
            return
        if self._path is None:
            self._stopped = True
            return
        with self._transaction() as con:
            con.execute("INSERT OR REPLACE INTO meta VALUES ('stopped', '1')")

    @staticmethod
    def _stored_stopped(con: sqlite3.Connection) -> bool:
        return con.execute("SELECT 1 FROM meta WHERE key='stopped'").fetchone() is not None

    def _check_not_stopped(self, summary: LedgerSummary) -> None:
        if not self._stopped:
            return
        raise BudgetError(
            f"this accountant stopped at its ceiling ({self._epsilon:g}, {self._delta:g}): "
            "it refused a charge earlier, and refuses every later one so that a search "
            "that reached the ceiling stops instead of choosing among the fits that ran. "
            f"This charge ({summary.epsilon:.6g}, {summary.delta:.3g}) was not recorded "
            "and no data was read. Call accountant.resume() to charge it again (or create "
            "it with stop_at_ceiling=False).")

    def amend(self, entry_id: int, ledger: PrivacyLedger | CompositeLedger) -> None:
        """Replace the ledger of entry ``entry_id`` by what the fit really ran.

        For fits that can only plan part of their mechanism before reading data (a private
        bound estimate, then a solver planned with the estimated bound): they charge a
        reservation (the bound estimates and the solver planned with placeholder bounds,
        the plan that runs for most solvers) and amend it to the real events. The ceiling
        is checked again with the amended total, with the same composition as
        :meth:`spent`: an amended ledger that would pass it raises ``BudgetError`` and
        nothing changes (the fit then amends to the part it really ran). The decision
        reads only the released bounds and public quantities.

        Parameters
        ----------
        entry_id : int
            The entry's id, as :meth:`charge` returned it.
        ledger : PrivacyLedger or CompositeLedger
            What the fit really ran.

        Raises
        ------
        BudgetError
            If the amended total would pass the ceiling (nothing changes).
        KeyError
            If no entry has this id.
        """
        new = summarize(ledger)
        if self._path is not None:
            try:
                self._amend_file(entry_id, ledger, new)
            except BudgetError:
                self._stop()
                raise
            return
        with self._lock:
            found = [i for i, (e, _) in enumerate(self._entries) if e.id == entry_id]
            if not found:
                raise KeyError(f"no entry with id {entry_id}.")
            i = found[0]
            entry, old = self._entries[i]
            totals = self._totals.minus(old).plus(new)
            try:
                self._check_amend(totals, old, new)
            except BudgetError:
                self._stop()
                raise
            self._entries[i] = (BudgetEntry(entry.index, entry.id, entry.timestamp,
                                            entry.source, entry.params, ledger,
                                            PrivacySpent(new.epsilon, new.delta)), new)
            self._totals = totals

    def _check_amend(self, totals: Totals, old: LedgerSummary, new: LedgerSummary) -> None:
        spent, _ = totals.spent(self._delta)
        if (spent.epsilon <= self._epsilon
                and spent.delta <= self._delta * (1.0 + _DELTA_ROUNDING)):
            return
        raise BudgetError(
            f"the fit's plan with its private bounds spends ({new.epsilon:.6g}, "
            f"{new.delta:.3g}) instead of the reserved ({old.epsilon:.6g}, {old.delta:.3g}) "
            f"and would bring the total to ({spent.epsilon:.6g}, {spent.delta:.3g}), beyond "
            f"the ceiling ({self._epsilon:g}, {self._delta:g}). Declare the bounds "
            "(data_norm, y_bound) or leave more room under the ceiling.")

    def refund(self, entry_id: int) -> None:
        """Remove an entry whose fit failed before releasing anything.

        Used by ``fit`` only; refunding a release that was returned to anyone voids the
        accountant's guarantee.

        Parameters
        ----------
        entry_id : int
            The entry's id, as :meth:`charge` returned it.

        Raises
        ------
        KeyError
            If no entry has this id.
        """
        if self._path is not None:
            self._refund_file(entry_id)
            return
        with self._lock:
            kept = [(e, s) for e, s in self._entries if e.id != entry_id]
            if len(kept) == len(self._entries):
                raise KeyError(f"no entry with id {entry_id}.")
            removed = next(s for e, s in self._entries if e.id == entry_id)
            self._entries = [(BudgetEntry(i, e.id, e.timestamp, e.source, e.params,
                                          e.ledger, e.spent), s)
                             for i, (e, s) in enumerate(kept)]
            # Exact sums: subtracting restores the total without the entry bit for bit.
            self._totals = self._totals.minus(removed)

    def _check_within(self, totals: Totals, summary: LedgerSummary) -> None:
        spent, _ = totals.spent(self._delta)
        if (spent.epsilon <= self._epsilon
                and spent.delta <= self._delta * (1.0 + _DELTA_ROUNDING)):
            return
        now = self._current_totals().spent(self._delta)[0]
        if spent.epsilon <= self._epsilon or (
                totals.delta > self._delta and totals.mu2_missing and totals.rdp_missing):
            # The delta ceiling binds first: deltas add up over fits.
            fits = "no fit" if summary.delta <= 0 else (
                f"{int(self._delta / summary.delta * (1 + _DELTA_ROUNDING))} fits")
            fix = (f"set BudgetAccountant(delta=...) to at least {spent.delta:.3g} "
                   f"(a ceiling of {self._delta:g} admits {fits} of delta "
                   f"{summary.delta:.3g}), or fit with delta=0 (a pure-DP solver)")
            binds = "delta"
        else:
            fix = ("lower the fit's epsilon, or use an accountant with a larger epsilon "
                   "ceiling")
            binds = "epsilon"
        raise BudgetError(
            f"the {binds} ceiling binds: this charge ({summary.epsilon:.6g}, "
            f"{summary.delta:.3g}) would bring the accountant's total to "
            f"({spent.epsilon:.6g}, {spent.delta:.3g}), beyond its ceiling "
            f"({self._epsilon:g}, {self._delta:g}); spent so far ({now.epsilon:.6g}, "
            f"{now.delta:.3g}). To go on, {fix}. Nothing was recorded or read."
        )

    # -- reading ---------------------------------------------------------------------------
    def _state(self) -> tuple[list[BudgetEntry], Totals]:
        if self._path is not None:
            return self._read_file()
        with self._lock:
            return [e for e, _ in self._entries], self._totals

    def _current_totals(self) -> Totals:
        """The running totals alone (one row on file, not every entry)."""
        if self._path is None:
            with self._lock:
                return self._totals
        with self._transaction(write=False) as con:
            return self._stored_totals(con)

    @property
    def entries(self) -> list[BudgetEntry]:
        """Every recorded entry, in order."""
        return self._state()[0]

    def __len__(self) -> int:
        return self._current_totals().count

    def spent(self) -> PrivacySpent:
        """The composed ``(epsilon, delta)`` of every entry (tightest applicable bound).

        Returns
        -------
        PrivacySpent
            The total, by the composition :attr:`composition` names.
        """
        return self._current_totals().spent(self._delta)[0]

    @property
    def composition(self) -> str:
        """The bound that gave :meth:`spent`: ``"gaussian"``, ``"rdp"`` or ``"basic"``."""
        return self._current_totals().spent(self._delta)[1]

    def remaining(self) -> PrivacySpent:
        """The ceiling minus :meth:`spent`.

        A conservative reading: tight composition is sub-additive, so a new fit may spend
        more epsilon than this and still fit.

        Returns
        -------
        PrivacySpent
            ``(epsilon, delta)`` left under the ceiling, at least 0 each.
        """
        spent = self.spent()
        return PrivacySpent(max(self._epsilon - spent.epsilon, 0.0),
                            max(self._delta - spent.delta, 0.0))

    # -- audit trail -----------------------------------------------------------------------
    def to_json(self) -> str:
        """The ceiling and every entry, with its dp_accounting event, as JSON text.

        Returns
        -------
        str
            The audit trail, which :meth:`from_json` reads back.
        """
        entries = [{"timestamp": e.timestamp, "source": e.source, "params": e.params,
                    "ledger": _ledger_to_dict(e.ledger),
                    "spent": [e.spent.epsilon, e.spent.delta]} for e in self.entries]
        spent = self.spent()
        return json.dumps({"format": _FORMAT, "epsilon": self._epsilon, "delta": self._delta,
                           "spent": [spent.epsilon, spent.delta], "entries": entries},
                          indent=1)

    @classmethod
    def from_json(cls, text: str, *, path=None) -> BudgetAccountant:
        """Rebuild an accountant from :meth:`to_json`; every ledger is re-accounted.

        Parameters
        ----------
        text : str
            Output of :meth:`to_json`.
        path : str or os.PathLike, optional
            A NEW SQLite file to hold the entries (in memory by default).

        Returns
        -------
        BudgetAccountant
            The accountant, with the trail's ceiling and entries.

        Raises
        ------
        ValueError
            If ``text`` is not an audit trail, or ``path`` exists.
        """
        data = json.loads(text)
        if data.get("format") != _FORMAT:
            raise ValueError(f"not a BudgetAccountant audit trail (format {_FORMAT!r}).")
        if path is not None and os.path.exists(path):
            raise ValueError(f"path {os.fspath(path)!r} exists; from_json writes a new file.")
        acc = cls(float(data["epsilon"]), float(data["delta"]), path=path)
        for e in data["entries"]:
            acc._restore(_ledger_from_dict(e["ledger"]), e["source"], e["params"],
                         e["timestamp"])
        return acc

    def _restore(self, ledger: PrivacyLedger, source: str, params: dict, stamp: str) -> None:
        """Record a past entry as it was (no ceiling check: it was spent already)."""
        summary = summarize(ledger)
        if self._path is not None:
            self._charge_file(ledger, summary, source, params, stamp, check=False)
            return
        with self._lock:
            entry = BudgetEntry(len(self._entries), self._next_id, stamp, source, params,
                                ledger, PrivacySpent(summary.epsilon, summary.delta))
            self._next_id += 1
            self._entries.append((entry, summary))
            self._totals = self._totals.plus(summary)

    # -- display ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        entries, totals = self._state()
        spent, method = totals.spent(self._delta)
        where = "" if self._path is None else f", path={self._path!r}"
        return (f"BudgetAccountant(epsilon={self._epsilon:g}, delta={self._delta:g}{where}): "
                f"{totals.count} entries, spent (epsilon={spent.epsilon:.4g}, "
                f"delta={spent.delta:.3g}) by {method} composition, remaining "
                f"(epsilon={max(self._epsilon - spent.epsilon, 0):.4g}, "
                f"delta={max(self._delta - spent.delta, 0):.3g}){self._notes(spent, method)}")

    def _notes(self, spent: PrivacySpent, method: str) -> str:
        """What binds: a delta ceiling reached before the epsilon one, a stop."""
        notes = []
        if self._delta == 0:
            notes.append("delta ceiling 0: only pure-DP fits (delta=0) are admitted")
        elif (method == "basic" and spent.delta >= self._delta
              and spent.epsilon < self._epsilon):
            notes.append("the delta ceiling is reached: only pure-DP fits (delta=0) are "
                         "admitted")
        if self.stopped:
            notes.append("stopped at its ceiling after a refusal (resume() to go on)")
        return "".join(f"; {n}" for n in notes)

    def _repr_html_(self) -> str:
        entries, totals = self._state()
        spent, method = totals.spent(self._delta)
        rows = "".join(
            f"<tr><td>{e.index}</td><td>{html.escape(e.timestamp[:19])}</td>"
            f"<td>{html.escape(e.source)}</td>"
            f"<td>{html.escape(_short_params(e.params))}</td>"
            f"<td>{e.spent.epsilon:.4g}</td><td>{e.spent.delta:.3g}</td></tr>"
            for e in entries)
        return (
            "<div><b>BudgetAccountant</b> ceiling (epsilon={:g}, delta={:g}){}<br>"
            "<table><thead><tr><th>#</th><th>time (UTC)</th><th>source</th><th>parameters"
            "</th><th>epsilon</th><th>delta</th></tr></thead><tbody>{}</tbody></table>"
            "<b>total</b> ({} entries, {} composition): epsilon={:.4g}, delta={:.3g}; "
            "<b>remaining</b>: epsilon={:.4g}, delta={:.3g}{}</div>"
        ).format(self._epsilon, self._delta,
                 "" if self._path is None else f", file {html.escape(self._path)}", rows,
                 totals.count, method, spent.epsilon, spent.delta,
                 max(self._epsilon - spent.epsilon, 0), max(self._delta - spent.delta, 0),
                 html.escape(self._notes(spent, method)))

    # -- SQLite storage --------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self._path, timeout=120.0, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        return con

    @contextmanager
    def _transaction(self, write: bool = True):
        """One SQLite transaction: committed on success, rolled back on any error.

        ``write``: ``BEGIN IMMEDIATE`` takes the write lock at once, so no other process
        can record between this transaction's reads and its writes.
        """
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield con
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    def _open_file(self, epsilon, delta, *, create: bool) -> tuple[float, float, str]:
        if not create and not os.path.exists(self._path):
            raise BudgetError(f"the accountant file {self._path!r} does not exist here; "
                              "refusing to start an empty accountant in its place.")
        with self._transaction() as con:
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            con.execute("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY "
                        "AUTOINCREMENT, timestamp TEXT, source TEXT, params TEXT, "
                        "ledger TEXT, summary TEXT)")
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            if "ceiling" in meta:
                stored = tuple(json.loads(meta["ceiling"]))
                if epsilon is not None and _check_ceiling(epsilon, delta) != stored:
                    raise BudgetError(
                        f"the accountant file {self._path!r} has the ceiling {stored}, not "
                        f"({epsilon}, {delta}); reopen it with BudgetAccountant(path=...) "
                        "alone, or use another path."
                    )
                return float(stored[0]), float(stored[1]), meta["uid"]
            if epsilon is None:
                raise BudgetError(f"{self._path!r} holds no accountant yet; give epsilon (and "
                                  "delta) to create one.")
            ceiling = _check_ceiling(epsilon, delta)
            uid = uuid.uuid4().hex
            con.execute("INSERT INTO meta VALUES ('format', ?), ('ceiling', ?), ('totals', ?), "
                        "('uid', ?)",
                        (_FORMAT, json.dumps(ceiling), json.dumps(Totals().to_dict()), uid))
            return (*ceiling, uid)

    @staticmethod
    def _stored_totals(con: sqlite3.Connection) -> Totals:
        (raw,) = con.execute("SELECT value FROM meta WHERE key='totals'").fetchone()
        return Totals.from_dict(json.loads(raw))

    @staticmethod
    def _store_totals(con: sqlite3.Connection, totals: Totals) -> None:
        con.execute("UPDATE meta SET value=? WHERE key='totals'",
                    (json.dumps(totals.to_dict()),))

    def _charge_file(self, ledger, summary, source, params, stamp, check=True) -> int:
        with self._transaction() as con:
            totals = self._stored_totals(con).plus(summary)
            if check:
                if self._stop_at_ceiling and self._stored_stopped(con):
                    self._stopped = True
                    try:
                        self._check_not_stopped(summary)
                    finally:
                        self._stopped = False
                self._check_within(totals, summary)
            cursor = con.execute(
                "INSERT INTO entries (timestamp, source, params, ledger, summary) "
                "VALUES (?, ?, ?, ?, ?)",
                (stamp, source, json.dumps(params), json.dumps(_ledger_to_dict(ledger)),
                 json.dumps(summary.to_dict())))
            self._store_totals(con, totals)
            return int(cursor.lastrowid)

    def _amend_file(self, entry_id: int, ledger, new: LedgerSummary) -> None:
        with self._transaction() as con:
            row = con.execute("SELECT summary FROM entries WHERE id=?", (entry_id,)).fetchone()
            if row is None:
                raise KeyError(f"no entry with id {entry_id}.")
            old = LedgerSummary.from_dict(json.loads(row[0]))
            totals = self._stored_totals(con).minus(old).plus(new)
            self._check_amend(totals, old, new)
            con.execute("UPDATE entries SET ledger=?, summary=? WHERE id=?",
                        (json.dumps(_ledger_to_dict(ledger)), json.dumps(new.to_dict()),
                         entry_id))
            self._store_totals(con, totals)

    def _refund_file(self, entry_id: int) -> None:
        with self._transaction() as con:
            row = con.execute("SELECT summary FROM entries WHERE id=?",
                              (entry_id,)).fetchone()
            if row is None:
                raise KeyError(f"no entry with id {entry_id}.")
            con.execute("DELETE FROM entries WHERE id=?", (entry_id,))
            removed = LedgerSummary.from_dict(json.loads(row[0]))
            # Exact sums: subtracting restores the total without the entry bit for bit.
            self._store_totals(con, self._stored_totals(con).minus(removed))

    def _read_file(self) -> tuple[list[BudgetEntry], Totals]:
        with self._transaction(write=False) as con:
            rows = con.execute("SELECT id, timestamp, source, params, ledger, summary FROM "
                               "entries ORDER BY id").fetchall()
            totals = self._stored_totals(con)
        entries = []
        for i, (entry_id, stamp, source, params, ledger, summary) in enumerate(rows):
            s = LedgerSummary.from_dict(json.loads(summary))
            entries.append(BudgetEntry(i, entry_id, stamp, source, json.loads(params),
                                       _ledger_from_dict(json.loads(ledger)),
                                       PrivacySpent(s.epsilon, s.delta)))
        return entries, totals

def _short_params(params: Mapping[str, Any]) -> str:
    keys = [k for k in params if k.split("__")[-1] in
            ("epsilon", "delta", "solver", "alpha", "data_norm", "accounting")]
    return ", ".join(f"{k}={params[k]}" for k in keys)
