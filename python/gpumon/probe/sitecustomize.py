"""gpumon allocator probe: a Python start-up hook (a ``sitecustomize`` module) and its loader.

gpumon writes this file and the package beside it, ``_gpumon_probe/``, into a private 0700
directory and puts that directory first on PYTHONPATH of the jobs it starts (``gpumon run``,
``gpumon probe env``), so Python's ``site`` imports this module at start-up in every process that
inherits the variable. It then:

1. runs the ``sitecustomize`` it shadows (the next one on sys.path, leaving out its own
   directory and GPUMON_PROBE_HOOK_DIR) as the module ``sitecustomize``, so the job sees what
   it would see without gpumon; that module's exceptions reach ``site`` unchanged, which prints
   its usual "Error in sitecustomize" line. With none to chain to, it leaves no
   ``sitecustomize`` module behind (``site`` is told there is none, as without gpumon);
2. unless GPUMON_PROBE_DIR is unset or empty, or GPUMON_PROBE_DISABLE=1, loads the probe's
   package from beside this file under its one private name, ``_gpumon_probe`` (never through
   sys.path, so a job's own module of that name is never taken for it, and nothing else of the
   probe is imported otherwise), and starts the probe: one daemon thread that writes the
   process's pool figures (docs/probe-format.md). The package's ``__init__`` says which part
   does what; each part is imported only once it is needed.

Everything here is caught and silent, and uses only os and sys (always loaded) and the import
system's own frozen modules. No hook runs under ``python -S``, ``-E`` or ``-I``.
"""

import os
import sys

_PACKAGE = "_gpumon_probe"


def _real(path):
    try:
        return os.path.realpath(path or os.getcwd())
    except Exception:
        return path


def _find_shadowed():
    """The spec of the ``sitecustomize`` this file shadows, or None."""
    try:
        own = _real(__file__)
        skip = {os.path.dirname(own)}
        if os.environ.get("GPUMON_PROBE_HOOK_DIR"):
            skip.add(_real(os.environ["GPUMON_PROBE_HOOK_DIR"]))
        paths = [p for p in sys.path if isinstance(p, str) and _real(p) not in skip]
        spec = sys.modules["_frozen_importlib_external"].PathFinder.find_spec("sitecustomize", paths)
        if spec is None or (spec.origin and _real(spec.origin) == own):
            return None
        return spec
    except Exception:
        return None


def _run_shadowed(spec):
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def _load():
    """The probe's package from this file's directory, as ``_gpumon_probe``: the one already
    loaded when another copy of the hook ran first (gpumon inside gpumon). Its path is resolved
    once, here: gpumon's hook directories make ``_gpumon_probe`` a link to the directory of one
    version's parts, switched when another gpumon writes others, so the parts this process loads
    later (each at its first use) are always of its own version."""
    loaded = sys.modules.get(_PACKAGE)
    if loaded is not None:
        return loaded
    where = os.path.realpath(os.path.join(os.path.dirname(__file__), _PACKAGE))
    spec = sys.modules["_frozen_importlib_external"].spec_from_file_location(
        _PACKAGE, os.path.join(where, "__init__.py"), submodule_search_locations=[where])
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules[_PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(_PACKAGE, None)
        raise
    return module


def _start_quietly():
    try:
        if os.environ.get("GPUMON_PROBE_DIR") and os.environ.get("GPUMON_PROBE_DISABLE") != "1":
            _load().start()
    except BaseException:
        pass


def _main():
    spec = _find_shadowed()
    failure = None
    if spec is not None:
        try:
            _run_shadowed(spec)
        except BaseException as exc:
            failure = exc
    _start_quietly()
    if failure is not None:
        raise failure
    if spec is None:
        raise ModuleNotFoundError("No module named 'sitecustomize'", name="sitecustomize")


if __name__ == "sitecustomize":
    _main()
