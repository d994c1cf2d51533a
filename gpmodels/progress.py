"""What the driver shows while it works: one-line messages on stdout and tqdm progress bars on stderr.

The library never prints: fits and learners report through explicit callbacks (``on_iteration``
of ``newton_cg``, ``exact_newton``, ``fit_map``, ``fit_learned``, ``learn_hyperparameters``).  The
driver (``run_spec``, ``run_study``, the CLI) holds a :class:`Console` and turns those calls into
messages and bars; the default console is silent, so a library call shows nothing unless its
caller asks.  ``gpmodels run|study`` show both; ``--quiet`` neither; ``--no-progress`` messages only.

While bars are open, messages go through ``tqdm.write`` so that a bar is cleared, the message
printed and the bar redrawn below it, instead of the two interleaving on the terminal.

Usage in a runner (``say`` is the runner's console)::

    with say.bar(total=opts.max_iter, desc="Newton") as bar:
        model = fit_map(op, lik, Y, opts, on_iteration=bar.newton)
    say(f"fit: {model.result.diagnostics.iterations} Newton iterations")
"""

from __future__ import annotations

import sys

import attrs

__all__ = ["Console", "Bar", "SILENT"]


class Bar:
    """A progress bar on stderr (a ``tqdm``), or nothing when the console has bars off.

    ``goto(n, **postfix)`` moves to position n and shows ``postfix`` (name -> value, formatted);
    ``newton(step)`` / ``outer(record)`` are ``goto`` for a :class:`~gpmodels.inference.map.newton_cg.NewtonStep`
    and an :class:`~gpmodels.optimize.lbfgs.OuterRecord`, so they can be passed as ``on_iteration``.
    """

    def __init__(self, bar=None):
        self._bar = bar  # a tqdm, or None: every method does nothing

    @property
    def active(self) -> bool:
        return self._bar is not None

    def goto(self, n: int, **postfix) -> None:
        if self._bar is None:
            return
        if postfix:
            self._bar.set_postfix({k: _fmt(v) for k, v in postfix.items()}, refresh=False)
        self._bar.update(max(0, int(n) - self._bar.n))
        self._bar.refresh()

    def step(self, **postfix) -> None:
        """Advance by one."""
        if self._bar is not None:
            self.goto(self._bar.n + 1, **postfix)

    def newton(self, step) -> None:
        """``on_iteration`` of a Newton fit: Φ and the gradient RMS in the postfix."""
        self.goto(step.iteration, Φ=step.phi, grad=step.grad_rms)

    def outer(self, record) -> None:
        """``on_iteration`` of CV learning: Ψ, max |∇Ψ| and the evaluations so far in the postfix."""
        self.goto(record.iteration, Ψ=record.value, grad=record.grad_norm, evals=record.evaluations)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


@attrs.frozen
class Console:
    """Messages (``console(msg)``, stdout, prefixed ``[prefix]``) and bars (``console.bar(...)``,
    stderr), each on or off.  Immutable; ``with_prefix`` gives the same settings for another run."""

    prefix: str = ""
    messages: bool = False
    bars: bool = False
    #: a file (``run.log`` of the report folder) that receives every message as a plain line, whether or not
    #: messages are shown (never the bars)
    log: str | None = None

    def __call__(self, msg: str) -> None:
        text = f"[{self.prefix}] {msg}" if self.prefix else msg
        if self.log is not None:
            self.write_log(text)
        if not self.messages:
            return
        if self.bars:
            from tqdm import tqdm

            tqdm.write(text, file=sys.stdout)
            sys.stdout.flush()
        else:
            print(text, flush=True)

    def bar(self, total: int | None, desc: str, *, unit: str = "it", leave: bool = False) -> Bar:
        """A bar over ``total`` steps (None: open-ended) labelled ``desc``; an inert one when bars are off.
        ``leave=False`` erases the bar when it closes (the runner's message sums it up)."""
        if not self.bars:
            return Bar()
        from tqdm import tqdm

        label = f"[{self.prefix}] {desc}" if self.prefix else desc
        return Bar(tqdm(total=total, desc=label, unit=unit, leave=leave, file=sys.stderr, dynamic_ncols=True))

    def write_log(self, line: str) -> None:
        """Append ``line`` (with the UTC time) to the log file, if any; a log that cannot be written is
        skipped (the run's results do not depend on it)."""
        if self.log is None:
            return
        import datetime

        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(f"{stamp} {line}\n")
        except OSError:
            pass

    def with_prefix(self, prefix: str) -> Console:
        return attrs.evolve(self, prefix=prefix)


#: shows nothing: the default of library calls
SILENT = Console()
