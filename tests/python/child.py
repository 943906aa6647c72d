"""Child processes for the tests that signal or wait on another process.

Two rules hold for every such test, whatever started pytest:

- A child starts with SIGINT at its default disposition, as a program started
  from a terminal does. A process started in the background by a
  non-interactive shell (`nohup`, `cmd &` in a script, many CI runners)
  inherits SIGINT *ignored*, exec keeps it ignored, and Python then never
  raises KeyboardInterrupt: a Ctrl-C test must not depend on that.
- Every wait has a deadline. Output is read on threads, so a child that stops
  talking fails the test after `timeout` seconds instead of hanging it.
"""
import queue
import signal
import subprocess
import threading
import time

DEFAULT_TIMEOUT = 60.0


def default_sigint():
    """preexec_fn: SIGINT back to its default, as a terminal would start us."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(condition, what, timeout=DEFAULT_TIMEOUT):
    """Polls `condition()` until it is true; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout} s")
        time.sleep(0.02)


class _Lines:
    """The lines of one pipe, read on a daemon thread; None marks the end."""

    def __init__(self, stream, name):
        self._name = name
        self._empty = stream.read(0)  # '' or b'', to join lines of either kind
        self._queue = queue.Queue()
        self._done = False
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        try:
            for line in iter(stream.readline, self._empty):
                self._queue.put(line)
        finally:
            stream.close()
            self._queue.put(None)

    def line(self, timeout=DEFAULT_TIMEOUT):
        """The next line (with its newline), or an empty one at the end of the output."""
        if self._done:
            return self._empty
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the child wrote no line on {self._name} within {timeout} s")
        if line is None:
            self._done = True
            return self._empty
        return line

    def rest(self, timeout=DEFAULT_TIMEOUT):
        """Everything up to the end of the output, joined."""
        parts = []
        while True:
            line = self.line(timeout)
            if not line:
                return self._empty.join(parts)
            parts.append(line)


class Child:
    """A subprocess with piped output read under deadlines; killed on exit.

    Use as a context manager: `with Child([...]) as c: c.stdout.line()`.
    """

    def __init__(self, args, stdin=None, text=True, **kw):
        self.proc = subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=text,
                                     preexec_fn=default_sigint, **kw)
        self.stdout = _Lines(self.proc.stdout, "stdout")
        self.stderr = _Lines(self.proc.stderr, "stderr")

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def finish(self, timeout=DEFAULT_TIMEOUT):
        """Waits for the exit; returns (returncode, rest of stdout, all of stderr left)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the child did not exit within {timeout} s")
        return code, self.stdout.rest(timeout), self.stderr.rest(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # The output threads close stdout and stderr when the pipes end.
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
