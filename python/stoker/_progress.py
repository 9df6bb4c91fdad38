"""A progress line on stderr (when it is a terminal, unless told otherwise), redrawn at most 10
times a second, for stoker.write_dataset, convert and verify."""

import sys
import time


class ProgressLine:
    """`what` ("writing DIR") and a count, its rate and, with a total, the time left; finish()
    leaves a last line, close() clears an unfinished one (after a failure)."""

    def __init__(self, enabled, what, unit=""):
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.what, self.unit = what, unit
        self.start = self.last = time.monotonic()
        self.shown = False

    def _draw(self, text, end=""):
        sys.stderr.write(f"\r\033[K{text}{end}")
        sys.stderr.flush()

    def update(self, done, total=None):
        now = time.monotonic()
        if not self.enabled or (self.shown and now - self.last < 0.1):
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        if total is None:
            text = f"{done}{self.unit}, {rate:,.0f}/s"
        else:
            eta = (total - done) / rate if rate > 0 else 0
            text = f"{done}/{total}{self.unit}, {rate:,.0f}/s, ETA {eta:.0f} s"
        self._draw(f"{self.what}: {text}")
        self.shown = True

    __call__ = update  # the native tools' progress(done, total)

    def finish(self, text, done):
        if self.enabled:
            seconds = time.monotonic() - self.start
            self._draw(f"{text} in {seconds:.1f} s ({done / max(seconds, 1e-9):,.0f}/s)", end="\n")
            self.shown = False

    def close(self):
        if self.shown:
            self._draw("")
            self.shown = False
