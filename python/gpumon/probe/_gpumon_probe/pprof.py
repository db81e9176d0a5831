"""A protocol buffer reader, enough for pprof's Profile (google/pprof, proto/profile.proto): what
JAX's ``device_memory_profile()`` returns, gzipped. Standard library only (gzip imported when a
profile is read)."""


def _varint(data, pos):
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data):
    """(field number, wire type, value) of one message: ints for varints, bytes otherwise."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise ValueError("field runs past the message")
            value, pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield number, wire, value


def _ints(wire, value):
    """A repeated integer field's values, packed or not."""
    if wire == 0:
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


def samples(blob):
    """[(device label or None, count, bytes, frames innermost first)] of a (gzipped) pprof."""
    if blob[:2] == b"\x1f\x8b":
        import gzip
        blob = gzip.decompress(blob)
    types, raw_samples, locations, functions, strings = [], [], {}, {}, []
    for number, wire, value in _fields(memoryview(blob).tobytes()):
        if number == 1 and wire == 2:
            types.append(dict((n, v) for n, w, v in _fields(value) if w == 0))
        elif number == 2 and wire == 2:
            raw_samples.append(value)
        elif number == 4 and wire == 2:
            loc_id, lines = 0, []
            for n, w, v in _fields(value):
                if n == 1 and w == 0:
                    loc_id = v
                elif n == 4 and w == 2:
                    line = dict((ln, lv) for ln, lw, lv in _fields(v) if lw == 0)
                    lines.append((line.get(1, 0), line.get(2, 0)))
            locations[loc_id] = lines
        elif number == 5 and wire == 2:
            fn = dict((n, v) for n, w, v in _fields(value) if w == 0)
            functions[fn.get(1, 0)] = (fn.get(2, 0), fn.get(4, 0))
        elif number == 6 and wire == 2:
            strings.append(value.decode("utf-8", "replace"))

    def text(i):
        return strings[i] if 0 <= i < len(strings) else ""

    names = [text(t.get(1, 0)) for t in types]
    space = names.index("space") if "space" in names else len(names) - 1
    count = names.index("allocations") if "allocations" in names else None
    out = []
    for raw in raw_samples:
        loc_ids, values, device = [], [], None
        for n, w, v in _fields(raw):
            if n == 1:
                loc_ids += _ints(w, v)
            elif n == 2:
                values += _ints(w, v)
            elif n == 3 and w == 2:
                label = dict((ln, lv) for ln, lw, lv in _fields(v) if lw == 0)
                if text(label.get(1, 0)) == "device":
                    device = text(label.get(2, 0))
        values = [v - (1 << 64) if v >= 1 << 63 else v for v in values]
        size = values[space] if 0 <= space < len(values) else 0
        blocks = values[count] if count is not None and count < len(values) else 1
        frames = []
        for loc in loc_ids:
            for fn_id, line in locations.get(loc, ()):
                name, filename = functions.get(fn_id, (0, 0))
                frames.append({"filename": text(filename), "line": line, "name": text(name)})
        out.append((device, blocks, size, frames))
    return out


def label_index(label):
    """The device number at the end of a pprof device label ("cuda:0", "CudaDevice(id=1)")."""
    digits = ""
    for ch in reversed((label or "").rstrip(")")):
        if not ch.isdigit():
            break
        digits = ch + digits
    return int(digits) if digits else None
