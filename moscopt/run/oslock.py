"""Advisory locks on an open file: `flock` on POSIX, `msvcrt.locking` on Windows.

Each platform's module is imported where it is used, so `moscopt.run` imports on both (a
module-level `import fcntl` made it fail on Windows). A lock is released by `unlock` or when its
process ends, so a dead process's lock never lingers. Windows has no shared locks: a probe there
takes the exclusive lock and gives it back at once.
"""

from __future__ import annotations

import os
import sys


def try_lock(fd: int, *, shared: bool = False) -> bool:
    """Lock the open file `fd` without waiting (exclusive, or `shared` where the platform has
    shared locks); False when another holder has it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Release this process's lock on `fd`."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)
