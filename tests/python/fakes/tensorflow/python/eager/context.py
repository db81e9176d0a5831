"""Stand-in for tensorflow.python.eager.context: no context until a job calls ``_init``."""
import types

_context = None


class Context:
    def __init__(self, info):
        self._initialized = True
        self.info = info

    def list_logical_devices(self, kind):
        return [types.SimpleNamespace(name="/device:GPU:%d" % i, device_type=kind) for i in sorted(self.info)]

    def get_memory_info(self, name):
        return dict(self.info[int(name.rsplit(":", 1)[1])])


def context_safe():
    return _context


def _init(info):
    global _context
    _context = Context(info)
