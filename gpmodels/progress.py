"""What the driver shows while it works: one-line messages on stdout and progress on stderr.

The library never prints: fits and learners report through explicit callbacks (``on_iteration``
of ``newton_cg``, ``exact_newton``, ``fit_map``, ``fit_learned``, ``learn_hyperparameters``).  The
driver (``run_spec``, ``run_study``, the CLI) holds a :class:`Console` and turns those calls into
messages and bars; the default console is silent, so a library call shows nothing unless its
caller asks.  ``gpmodels run|study`` show both; ``--quiet`` neither; ``--no-progress`` messages only.

Progress is a tqdm bar only when stderr is a terminal; otherwise (a log file, a pipe, CI) it is
plain lines ``[name] Newton 5/30 Φ=..., grad=... (12 s, about 60 s left)``, the first at once and then at most
one every ``Console.interval`` seconds, plus the last state when the bar closes: no redraws in log files.
A bar over a known limit (the outer optimiser's ``max_iter``, a Newton fit's) shows iterations out of that
limit and an estimate of the time left at the present rate, an upper bound since the run may stop before its
limit.  A bar with a ``delay`` (the Newton fits') shows only once it has run that many seconds, so that short
fits draw nothing.
Every message also goes to the Python logger ``gpmodels`` (level INFO; silent unless the
application configures logging) and, when the console has a ``log`` file, to that file.

While bars are open, messages go through ``tqdm.write`` so that a bar is cleared, the message
printed and the bar redrawn below it, instead of the two interleaving on the terminal.

Usage in a runner (``say`` is the runner's console)::

    with say.newton_bar(opts.max_iter, "Newton") as bar:
        model = fit_map(op, lik, Y, NewtonCG(opts), on_iteration=bar.newton)
    say(f"fit: {model.result.diagnostics.iterations} Newton iterations")
"""

from __future__ import annotations

import logging
import sys
import time

import attrs

__all__ = ["Console", "Bar", "LineBar", "LOGGER", "NEWTON_DELAY"]

#: the logger every console message goes to (INFO)
LOGGER = logging.getLogger("gpmodels")
#: seconds a Newton fit runs before its bar shows
NEWTON_DELAY = 3.0


def stderr_is_terminal() -> bool:
    """Whether standard error is an interactive terminal (a closed or replaced stream: no)."""
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):
        return False


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


class LineBar(Bar):
    """Progress as plain lines on stderr, for a stream that is not a terminal: ``label n/total k=v, ...``
    (``label n`` when the total is open-ended), the first update at once, then at most one line every
    ``interval`` seconds, and the last state on ``close`` when it was not shown yet."""

    def __init__(self, total: int | None, label: str, interval: float, delay: float = 0.0):
        super().__init__(None)
        self._total, self._label, self._interval = total, label, float(interval)
        self._n, self._postfix, self._last, self._shown, self._open = 0, {}, None, None, True
        self._start, self._delay = time.monotonic(), float(delay)

    @property
    def active(self) -> bool:
        return self._open

    def goto(self, n: int, **postfix) -> None:
        if not self._open:
            return
        self._n = max(self._n, int(n))
        self._postfix.update(postfix)
        now = time.monotonic()
        if now - self._start < self._delay:
            return
        if self._last is None or now - self._last >= self._interval:
            self._emit()
            self._last = now

    def step(self, **postfix) -> None:
        self.goto(self._n + 1, **postfix)

    def _line(self) -> str:
        count = f"{self._n}/{self._total}" if self._total is not None else f"{self._n}"
        post = ", ".join(f"{k}={_fmt(v)}" for k, v in self._postfix.items())
        return f"{self._label} {count}" + (f" {post}" if post else "") + self._times()

    def _times(self) -> str:
        """`` (elapsed, about ... left)``: the time left at the mean rate so far, when the total is known."""
        elapsed = time.monotonic() - self._start
        text = f" ({_duration(elapsed)}"
        if self._total is not None and 0 < self._n < self._total:
            text += f", at most about {_duration(elapsed / self._n * (self._total - self._n))} left"
        return text + ")"

    def _emit(self) -> None:
        line = self._line()
        print(line, file=sys.stderr, flush=True)
        self._shown = line

    def close(self) -> None:
        if self._open and self._last is not None and self._line() != self._shown:
            self._emit()
        self._open = False


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s`` or ``2 h 03 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


@attrs.frozen
class Console:
    """Messages (``console(msg)``, stdout, prefixed ``[prefix]``) and bars (``console.bar(...)``,
    stderr), each on or off.  Immutable.
    ``terminal``: tqdm bars (True) or plain lines (False); None decides by ``sys.stderr.isatty()``."""

    prefix: str = ""
    messages: bool = False
    bars: bool = False
    #: a file (``run.log`` of the report folder) that receives every message as a plain line, whether or not
    #: messages are shown (never the bars)
    log: str | None = None
    terminal: bool | None = None
    #: the fewest seconds between two plain progress lines
    interval: float = 5.0

    def __call__(self, msg: str) -> None:
        text = f"[{self.prefix}] {msg}" if self.prefix else msg
        LOGGER.info(text)
        if self.log is not None:
            self.write_log(text)
        if not self.messages:
            return
        if self.bars and (self.terminal if self.terminal is not None else stderr_is_terminal()):
            from tqdm import tqdm

            tqdm.write(text, file=sys.stdout)
            sys.stdout.flush()
        else:
            print(text, flush=True)

    def bar(self, total: int | None, desc: str, *, unit: str = "it", leave: bool = False, delay: float = 0.0) -> Bar:
        """A bar over ``total`` steps (None: open-ended) labelled ``desc``; an inert one when bars are off.
        ``leave=False`` erases the bar when it closes (the runner's message sums it up); ``delay``: seconds
        before it shows (module docstring)."""
        if not self.bars:
            return Bar()
        label = f"[{self.prefix}] {desc}" if self.prefix else desc
        if not (self.terminal if self.terminal is not None else stderr_is_terminal()):
            return LineBar(total, label, self.interval, delay)
        from tqdm import tqdm

        return Bar(
            tqdm(total=total, desc=label, unit=unit, leave=leave, file=sys.stderr, dynamic_ncols=True, delay=delay)
        )

    def newton_bar(self, total: int | None, desc: str) -> Bar:
        """A bar for a Newton fit: shown once it has run :data:`NEWTON_DELAY` seconds."""
        return self.bar(total, desc, delay=NEWTON_DELAY)

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
