"""A signal never deadlocks the daemon (shell/timers.py).

A handler runs in the main thread between two of its bytecodes. The loop's main thread
spends its idle time in ``dealer.wake.wait()``, holding the event's lock at moments; a
handler that set the event itself then waited forever for a lock its own thread held, and
the daemon ignored every later SIGTERM. Each case runs in a process of its own (a handler
is the main thread's), which must end within a time limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, types
    from dealer.shell.timers import install_signals

    dealer = types.SimpleNamespace(stopping=False, reload_requested=False, wake=threading.Event())
    install_signals(dealer)
    number = getattr(signal, sys.argv[1])
    with dealer.wake._cond:  # the main thread inside wait() or clear(), the event's lock held
        os.kill(os.getpid(), number)
        for _ in range(1000):  # bytecodes: the handler runs here, the lock held
            pass
    assert dealer.wake.wait(timeout=5), "the loop was not woken"
    print(dealer.stopping, dealer.reload_requested)
""")


def handled(name: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, name], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_sigterm_while_the_wake_events_lock_is_held_stops_the_daemon() -> None:
    assert handled("SIGTERM") == "True False"


def test_sighup_while_the_wake_events_lock_is_held_asks_for_a_reload() -> None:
    assert handled("SIGHUP") == "False True"
