"""Kernel-enforced confinement applied by the sandbox's bootstrap to its own process.

Loaded by `moscopt.agent.tools._bootstrap` inside the sandboxed interpreter (standard library only,
like the bootstrap). Each function is best effort and returns what took effect, so the bootstrap
can report it and refuse to run the code when reads are not isolated:

- `apply_landlock`: reads allowed only below the interpreter, system library and work dir paths,
  writes only below the work dir and to /dev/null, no execve, no TCP (ABI 4+), no signals to and
  no abstract unix sockets of processes outside the sandbox (ABI 6+);
- `apply_seccomp`: a syscall filter that refuses new processes (fork, vfork, clone without
  CLONE_THREAD; clone3 answers ENOSYS so that threads fall back to clone), execve, signals to
  any process but this one (kill, tgkill, rt_sigqueueinfo, pidfd_*), ptrace and cross-process
  memory access, sockets other than internet/netlink ones in a private network namespace (never
  unix sockets: ssh-agent, D-Bus and the like are path sockets that no other layer hides
  everywhere), io_uring (whose operations bypass the filter), namespace and mount changes, BPF,
  perf, keyrings, userfaultfd, kernel modules, and terminal input injection (TIOCSTI);
- `set_no_new_privs`, `set_dumpable`.

These need ctypes, which the bootstrap then drops from ``sys.modules`` (the audit hook refuses
ctypes to the user's code).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 4, 38, 22
_SECCOMP_MODE_FILTER = 2

# ------------------------------------------------------------------------------------ Landlock

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on all arches
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 1 << 1, 1 << 2, 1 << 3
_FS_CHANGE_V1 = sum(1 << bit for bit in range(4, 13))  # remove, make char/dir/reg/sock/fifo/...
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_FILE_ONLY = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
# Device files any Python program may read (os.urandom falls back to /dev/urandom).
_READABLE_DEVICES = ("/dev/urandom", "/dev/random", "/dev/zero")


def _libc() -> Any:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 without Landlock."""
    import ctypes

    libc = _libc()
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(abi), 0)


def set_no_new_privs() -> bool:
    libc = _libc()
    return bool(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)


def set_dumpable(dumpable: bool) -> bool:
    """Not dumpable: processes of the same uid cannot open our /proc entries or ptrace us."""
    libc = _libc()
    return bool(libc.prctl(_PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) == 0)


def set_parent_death_signal(signum: int) -> bool:
    """Have the kernel send ``signum`` to this process when its parent exits."""
    libc = _libc()
    return bool(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)


def apply_landlock(workdir: str, read_paths: Iterable[str], read_files: Iterable[str]) -> list[str]:
    """Confine this process (and its future children) with Landlock; best effort.

    ``read_paths`` (directories or files) may be read, ``read_files`` too (e.g. the stdin file,
    reopened through /dev/stdin), ``workdir`` read and changed; nothing may be executed.
    Returns the names of the protections that took effect (empty when Landlock is unavailable).
    """
    import ctypes

    libc = _libc()
    abi = landlock_abi()
    if abi < 1 or not set_no_new_privs():
        return []
    fs_rights = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_READ_DIR | _FS_CHANGE_V1
    if abi >= 2:
        fs_rights |= _FS_REFER
    if abi >= 3:
        fs_rights |= _FS_TRUNCATE
    if abi >= 5:
        fs_rights |= _FS_IOCTL_DEV
    net_rights = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scopes = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0
    fields = [fs_rights] + ([net_rights] if abi >= 4 else []) + ([scopes] if abi >= 6 else [])
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    ruleset = libc.syscall(
        _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0
    )
    if ruleset < 0:
        return []

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    def allow(path: str, rights: int) -> bool:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return True  # nothing there to allow
        try:
            if not os.path.isdir(f"/proc/self/fd/{fd}"):
                rights &= _FS_FILE_ONLY
            rule = PathBeneath(rights & fs_rights, fd)
            return bool(libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) == 0)
        finally:
            os.close(fd)

    read = _FS_READ_FILE | _FS_READ_DIR
    null_rights = _FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
    try:
        ok = allow(workdir, fs_rights & ~_FS_EXECUTE) and allow("/dev/null", null_rights)
        for path in [*read_paths, *_READABLE_DEVICES]:
            ok = ok and allow(path, read)
        for path in read_files:
            ok = ok and allow(path, _FS_READ_FILE)
        if not ok or libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return []
    finally:
        os.close(ruleset)
    applied = [f"landlock-abi{abi}:fs-read", "landlock:fs-write", "landlock:no-exec"]
    if net_rights:
        applied.append("landlock:no-tcp")
    if scopes:
        applied.append("landlock:scoped-signals")
    return applied


# ------------------------------------------------------------------------------------- seccomp

_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_EPERM, _ENOSYS = 1, 38
_LD_ABS_W, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_CLONE_THREAD = 0x00010000
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_X32_BIT = 0x40000000

# name -> syscall number, for the architectures the filter knows (others get no filter).
_X86_64 = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
    "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
    "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "process_madvise": 440, "kcmp": 312,
    "socket": 41, "socketpair": 53, "ioctl": 16,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "reboot": 169, "syslog": 103, "acct": 163, "swapon": 167, "swapoff": 168,
    "quotactl": 179, "iopl": 172, "ioperm": 173, "uselib": 134,
}  # fmt: skip
_AARCH64 = {
    "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
    "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
    "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "process_madvise": 440, "kcmp": 272,
    "socket": 198, "socketpair": 199, "ioctl": 29,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218,
    "open_by_handle_at": 265, "name_to_handle_at": 264, "init_module": 105,
    "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
    "reboot": 142, "syslog": 116, "acct": 89, "swapon": 224, "swapoff": 225, "quotactl": 60,
}  # fmt: skip
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}
# Refused outright (whatever the arguments).
_DENIED = (
    "fork", "vfork", "execve", "execveat", "tkill", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
    "kcmp", "io_uring_setup", "io_uring_enter", "io_uring_register", "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "syslog", "acct", "swapon", "swapoff", "quotactl", "iopl", "ioperm", "uselib",
)  # fmt: skip
_SIGNALLING = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # first arg: a pid

Instruction = tuple[int, "int | str", "int | str", int]


def _assemble(program: list[tuple[str, Instruction]]) -> list[tuple[int, int, int, int]]:
    """Resolve jump labels (strings) into BPF's relative offsets; "" means the next one."""
    where = {label: index for index, (label, _) in enumerate(program) if label}

    def offset(index: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        distance = where[target] - index - 1 if target else 0
        if not 0 <= distance <= 255:  # pragma: no cover - the program is small
            raise ValueError("seccomp jump out of range")
        return distance

    return [
        (code, offset(index, true), offset(index, false), k)
        for index, (_, (code, true, false, k)) in enumerate(program)
    ]


def seccomp_program(
    machine: str, own_pid: int, signal_pids: Iterable[int] = (), net_namespace: bool = False
) -> list[tuple[int, int, int, int]] | None:
    """The filter for this architecture as (code, jt, jf, k) tuples, or None if unknown.

    Signals may go to ``own_pid`` and ``signal_pids`` only; internet and netlink sockets are
    allowed only in a private network namespace (they reach nothing there).
    """
    if machine not in _ARCHES:
        return None
    arch, numbers = _ARCHES[machine]
    prog: list[tuple[str, Instruction]] = [
        ("", (_LD_ABS_W, 0, 0, 4)),  # seccomp_data.arch
        ("", (_JEQ, "", "kill", arch)),
        ("", (_LD_ABS_W, 0, 0, 0)),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        prog.append(("", (_JGE, "deny", "", _X32_BIT)))
    prog += [("", (_JEQ, "deny", "", numbers[name])) for name in _DENIED if name in numbers]
    prog += [
        ("", (_JEQ, "clone", "", numbers["clone"])),
        ("", (_JEQ, "enosys", "", numbers["clone3"])),
        *[("", (_JEQ, "signal", "", numbers[name])) for name in _SIGNALLING],
        ("", (_JEQ, "socket", "", numbers["socket"])),
        ("", (_JEQ, "socketpair", "", numbers["socketpair"])),
        ("", (_JEQ, "ioctl", "allow", numbers["ioctl"])),
        ("clone", (_LD_ABS_W, 0, 0, 16)),  # low half of args[0]: the flags
        ("", (_JSET, "allow", "deny", _CLONE_THREAD)),
        ("signal", (_LD_ABS_W, 0, 0, 16)),  # args[0]: the pid
        *[("", (_JEQ, "allow", "", pid)) for pid in [own_pid, *signal_pids]],
        ("", (_RET, 0, 0, _RET_ERRNO | _EPERM)),
        ("socket", (_LD_ABS_W, 0, 0, 16)),  # args[0]: the address family
        *[
            ("", (_JEQ, "allow", "", family))
            for family in ((_AF_INET, _AF_INET6, _AF_NETLINK) if net_namespace else ())
        ],
        ("", (_RET, 0, 0, _RET_ERRNO | _EPERM)),
        ("socketpair", (_LD_ABS_W, 0, 0, 16)),
        ("", (_JEQ, "allow", "deny", _AF_UNIX)),
        ("ioctl", (_LD_ABS_W, 0, 0, 24)),  # low half of args[1]: the request
        ("", (_JEQ, "deny", "", _TIOCSTI)),
        ("", (_JEQ, "deny", "allow", _TIOCLINUX)),
        ("allow", (_RET, 0, 0, _RET_ALLOW)),
        ("deny", (_RET, 0, 0, _RET_ERRNO | _EPERM)),
        ("enosys", (_RET, 0, 0, _RET_ERRNO | _ENOSYS)),
        ("kill", (_RET, 0, 0, _RET_KILL_PROCESS)),
    ]
    return _assemble(prog)


def apply_seccomp(signal_pids: Iterable[int] = (), net_namespace: bool = False) -> list[str]:
    """Install `seccomp_program` on this process (inherited by its threads); best effort."""
    program = seccomp_program(os.uname().machine, os.getpid(), signal_pids, net_namespace)
    if program is None or not set_no_new_privs():
        return []
    import ctypes

    libc = _libc()

    class SockFilter(ctypes.Structure):
        _fields_ = (
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        )

    class SockFprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter)))

    filters = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    fprog = SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return []
    return ["seccomp"]
