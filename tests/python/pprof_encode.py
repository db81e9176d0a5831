"""A tiny protocol buffer encoder for pprof profiles shaped like JAX's device memory profile
(sample types allocations/count and space/bytes; labels kind and device), gzipped."""
import gzip


def _varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, value):
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _packed(number, values):
    return _field(number, b"".join(_varint(v) for v in values))


def encode(buffers, packed=True):
    """``buffers``: [(device label, count, bytes, [(filename, line, function), ...])], frames
    innermost first. Returns the gzipped Profile."""
    strings = [""]

    def s(text):
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    body, locations, functions = [], {}, {}
    for kind, unit in (("allocations", "count"), ("space", "bytes")):
        body.append(_field(1, _field(1, s(kind)) + _field(2, s(unit))))
    for device, count, size, frames in buffers:
        loc_ids = []
        for filename, line, function in frames:
            fn = functions.setdefault((function, filename), len(functions) + 1)
            loc = locations.setdefault((fn, line), len(locations) + 1)
            loc_ids.append(loc)
        sample = (_packed(1, loc_ids) if packed else b"".join(_field(1, i) for i in loc_ids))
        sample += _packed(2, [count, size]) if packed else _field(2, count) + _field(2, size)
        sample += _field(3, _field(1, s("kind")) + _field(2, s("buffer")))
        sample += _field(3, _field(1, s("device")) + _field(2, s(device)))
        body.append(_field(2, sample))
    for (fn, line), loc in locations.items():
        body.append(_field(4, _field(1, loc) + _field(4, _field(1, fn) + _field(2, line))))
    for (function, filename), fn in functions.items():
        body.append(_field(5, _field(1, fn) + _field(2, s(function)) + _field(4, s(filename))))
    for text in strings:
        body.append(_field(6, text.encode()))
    return gzip.compress(b"".join(body))
