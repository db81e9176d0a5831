"""How the process ends, recorded in its last ``<pid>.json`` (``end``): an uncaught exception in
the main thread, seen by the ``sys.excepthook`` the probe chains in front of the one it found
(which it calls first, exactly as before, with the same arguments; what it returns or raises
reaches Python unchanged), or the interpreter's normal shutdown, seen by ``atexit`` (the end of
the script, ``sys.exit``). The exit status of a normal shutdown is out of reach without changing
the job (Python keeps it in C, past ``atexit``): ``code`` is then null. A process killed by a
signal, ended by ``os._exit`` or crashed runs neither, and leaves no end record: its absence is
the evidence. No exception's ``__str__`` is called: the message is its first argument when that
is a string or a number."""

import sys
import threading
import time

from . import common

_MAX_TYPE = 128
_MAX_MESSAGE = 300
_previous = None  # the sys.excepthook found at start


def _printable(text, limit):
    """At most ``limit`` characters, each one that is not printable written as its escape."""
    text = text[:limit]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)[:limit]


def _type_name(kind):
    module = type.__getattribute__(kind, "__module__")
    name = type.__getattribute__(kind, "__qualname__")
    if not isinstance(name, str):
        name = kind.__name__
    if isinstance(module, str) and module not in ("builtins", "__main__"):
        name = module + "." + name
    return _printable(name, _MAX_TYPE)


def _message(value):
    """The first line of the exception's first argument, without running any of its code."""
    args = BaseException.__getattribute__(value, "args") if isinstance(value, BaseException) else ()
    first = args[0] if len(args) >= 1 else ""
    if type(first) in (int, float, bool):
        first = repr(first)
    elif not isinstance(first, str):
        return ""
    first = str.__str__(first)
    return _printable((first.splitlines() or [""])[0], _MAX_MESSAGE)


def exception_end(kind, value):
    """The end record of an uncaught exception."""
    end = {"how": "exception", "code": 1, "exception": None,
           "at_ms": time.time_ns() // 1000000}
    try:
        end["exception"] = {"type": _type_name(kind), "message": _message(value)}
        if issubclass(kind, KeyboardInterrupt):
            end["code"] = None  # Python ends itself with SIGINT then
    except BaseException:
        pass
    return end


def _interactive():
    return bool(sys.flags.interactive) or hasattr(sys, "ps1")


def _uncaught():
    """Whether the hook was called by Python for an exception that ended the main thread's
    code (no Python frame below the hook), not by the job to print one and go on."""
    if threading.current_thread() is not threading.main_thread() or _interactive():
        return False
    try:
        sys._getframe(2)
    except ValueError:
        return True
    return False


def _hook(kind, value, tb):
    uncaught = False
    try:
        uncaught = _uncaught()
    except BaseException:
        pass
    try:
        return _previous(kind, value, tb)
    finally:
        if uncaught:
            try:
                probe = common.current
                if probe is not None and probe.end is None:
                    probe.end = exception_end(kind, value)
                    probe.write_last()
            except BaseException:
                pass


def install():
    """Chains the hook in front of the current ``sys.excepthook`` (once)."""
    global _previous
    if _previous is None and callable(sys.excepthook):
        _previous = sys.excepthook
        sys.excepthook = _hook


def at_exit(probe):
    """At the interpreter's shutdown (``atexit``): writes the end record, an exception's when
    the hook saw one (or, where the job replaced the hook, Python left one in
    ``sys.last_exc``/``sys.last_value``), else a normal exit."""
    if probe.end is None:
        last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        replaced = sys.excepthook is not _hook  # else the hook saw every uncaught exception
        if replaced and isinstance(last, BaseException) and not _interactive():
            probe.end = exception_end(type(last), last)
        else:
            probe.end = {"how": "exit", "code": None, "exception": None,
                         "at_ms": time.time_ns() // 1000000}
    probe.write_last()
