"""The probe's files: a small JSON encoder (the json module is never imported), and every file
written atomically into the probe directory: ``.<name>.tmp`` created O_EXCL|O_NOFOLLOW with mode
0600 through a descriptor of the directory (refused when it is a link or another user's), then
renamed onto ``<name>``. Missing directories on the way are created 0700."""

import os
import sys

from .common import attr, ready

_ESCAPES = {i: "\\u%04x" % i for i in range(32)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def to_json(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(to_json(str(k)) + ": " + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_json(v) for v in value) + "]"
    raise TypeError("cannot encode %s" % type(value).__name__)


def encode(value):
    """``to_json(value)``, by the json module's C encoder when the process has loaded it already
    (torch and JAX do; it is never imported here) and no string needed escaping (its escapes
    differ from ours, so then ours run): the same text either way, faster for a large map."""
    json = sys.modules.get("json")
    dumps = attr(json, "dumps") if ready(json) else None
    if dumps is not None:
        try:
            text = dumps(value, ensure_ascii=False, check_circular=False)
            if type(text) is str and "\\" not in text:
                return text
        except Exception:
            pass
    return to_json(value)


def make_dirs(path):
    parent = os.path.dirname(path.rstrip("/"))
    if parent and parent != path and not os.path.isdir(parent):
        make_dirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # created here, so ours: the umask decides nothing


def open_dir(path):
    """A descriptor of the probe directory, refused when it is a link or another user's."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dfd = os.open(path, flags)
    except FileNotFoundError:
        make_dirs(path)
        dfd = os.open(path, flags)
    owner = os.fstat(dfd).st_uid
    if owner != os.geteuid():
        os.close(dfd)
        raise PermissionError("probe directory belongs to uid %d, not to this user" % owner)
    return dfd


def write_file(directory, final, data, dfd=None):
    """Atomically: ``.<final>.tmp`` (O_EXCL|O_NOFOLLOW, 0600), then renamed onto ``final``,
    through ``dfd`` or a descriptor of ``directory`` opened for it."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    own_dfd = dfd is None
    dfd = open_dir(directory) if own_dfd else dfd
    tmp = "." + final + ".tmp"
    try:
        try:
            os.unlink(tmp, dir_fd=dfd)  # left by a write that was cut off
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dfd)
        try:
            try:
                os.fchmod(fd, 0o600)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, final, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    finally:
        if own_dfd:
            os.close(dfd)


def unlink(dfd, name):
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass
