"""Stand-in for cupy.cuda.runtime: a per-thread current device, and a record of every switch."""
import threading

_local = threading.local()
switched_to = []


def getDevice():
    return getattr(_local, "device", 0)


def setDevice(device):
    switched_to.append(device)
    _local.device = device
