"""The attack suite, part 1: model code, run as the agent's ``python`` tool call, goes after the
machine's files, sockets and network. Each attack must come back contained: nothing planted
outside the sandbox appears in what the model sees, nothing outside is written or reached.

Every attack runs in each mode of `ATTACK_MODES` (tests/agent/tools/conftest.py): the sandbox as
this machine runs it, bubblewrap alone, and Landlock + seccomp alone (no bubblewrap, no namespaces);
the kernel-only modes switch the audit hook off, because the hook is not the boundary (the
``getframe-rebind`` and ``isdir-patch`` attacks are the pure-Python ways past it). CI runs this
suite as root and as an unprivileged user (``tests/agent/tools/run_unprivileged.sh``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from attack_helpers import Planted, observe

pytestmark = pytest.mark.usefixtures("no_leftover_processes", "sandbox_tmp")

# Disables every check of an audit hook that keeps its policy in module globals, as the
# sandbox's hook did (issue 12); today's hook binds its policy when it is made.
GETFRAME_REBIND = """
import sys
frame = sys._getframe()
while frame is not None:
    for name, value in list(frame.f_globals.items()):
        if isinstance(value, (set, frozenset)) and {"os.fork", "socket.connect"} & set(value):
            frame.f_globals[name] = frozenset()
        elif isinstance(value, dict) and "os.mkdir" in value:
            frame.f_globals[name] = {}
    frame = frame.f_back
"""


def _read_attacks(p: Planted) -> dict[str, str]:
    key, env, db = str(p.ssh_key), str(p.dotenv), str(p.database)
    return {
        "ssh-key": f"print(open({key!r}).read())",
        "dotenv": f"print(open({env!r}).read())",
        "list-ssh-dir": f"import os\nprint(os.listdir({str(p.ssh_key.parent)!r}))",
        "getframe-rebind": GETFRAME_REBIND + f"print(open({key!r}).read())",
        "isdir-patch": (
            "import os\nos.path.isdir = lambda path: False\n"
            "root = os.open('/', os.O_RDONLY)\n"
            f"fd = os.open({key.lstrip('/')!r}, os.O_RDONLY, dir_fd=root)\n"
            "print(os.read(fd, 4096))"
        ),
        "sqlite-uri": (
            f"import sqlite3\ndb = sqlite3.connect('file:{db}?mode=ro', uri=True)\n"
            "print(db.execute('select * from secrets').fetchall())"
        ),
        "sqlite-attach": (
            "import sqlite3\ndb = sqlite3.connect(':memory:')\ndb.set_authorizer(None)\n"
            f"db.execute(\"attach database '{db}' as other\")\n"
            "print(db.execute('select * from other.secrets').fetchall())"
        ),
        "sqlite-load-extension": (
            "import sqlite3\ndb = sqlite3.connect(':memory:')\n"
            "if not hasattr(db, 'enable_load_extension'):\n"
            "    print('this sqlite3 has no extension loading')\n"
            "else:\n    db.enable_load_extension(True)\n"
            "    db.load_extension('/usr/lib/x86_64-linux-gnu/libc.so.6')\n"
        ),
    }


@pytest.mark.parametrize(
    "attack",
    [
        "ssh-key",
        "dotenv",
        "list-ssh-dir",
        "getframe-rebind",
        "isdir-patch",
        "sqlite-uri",
        "sqlite-attach",
        "sqlite-load-extension",
    ],
)
def test_files_outside_stay_unread(attack_mode: str, planted: Planted, attack: str) -> None:
    seen = observe(_read_attacks(planted)[attack])
    assert not any(text in seen for text in planted.all_texts), seen


@pytest.fixture(scope="module")
def native_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bytes]:
    """A shared library whose constructor tries to read the file named by STEAL_PATH."""
    if shutil.which("gcc") is None:
        pytest.skip("no C compiler to build the native attack")
    src = tmp_path_factory.mktemp("native") / "steal.c"
    src.write_text(
        "#include <fcntl.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void steal(void) {\n"
        '  char buf[512]; write(1, "native code ran\\n", 16);\n'
        '  int fd = open(getenv("STEAL_PATH") ? getenv("STEAL_PATH") : "/", O_RDONLY);\n'
        '  if (fd < 0) { write(1, "open refused\\n", 13); return; }\n'
        "  int n = read(fd, buf, sizeof buf); if (n > 0) write(1, buf, n);\n}\n"
        "int sqlite3_extension_init(void *db, char **err, const void *api) { return 0; }\n"
    )
    out = src.with_suffix(".so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    yield out.read_bytes()


def test_native_code_written_by_the_model_is_confined_too(
    attack_mode: str, planted: Planted, native_library: bytes
) -> None:
    # What sqlite3.load_extension or ctypes would run: the kernel layers still hold.
    code = (
        f"import os\nos.environ['STEAL_PATH'] = {str(planted.ssh_key)!r}\n"
        f"open('steal.so', 'wb').write(bytes.fromhex({native_library.hex()!r}))\n"
        "import ctypes\nctypes.CDLL('./steal.so')\n"
    )
    seen = observe(code)
    assert planted.key_text not in seen, seen
    if attack_mode != "as-available":  # no audit hook: the library did run
        assert "native code ran" in seen


def test_writes_outside_do_not_happen(attack_mode: str, planted: Planted) -> None:
    target = planted.root / f"pwned-{uuid.uuid4().hex}"
    code = (
        GETFRAME_REBIND
        + "import os\nos.path.isdir = lambda path: False\n"
        + f"open({str(target)!r}, 'w').write('pwned')"
    )
    observe(code)
    assert not target.exists()


def test_environment_secrets_never_arrive(
    attack_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"sk-env-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", marker)
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent-" + marker)
    code = (
        "import os\nprint(dict(os.environ))\nfound = []\n"
        "for pid in [os.getppid(), *[p for p in os.listdir('/proc') if p.isdigit()]]:\n"
        "    try:\n        found.append(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError:\n        pass\nprint(found)\n"
    )
    assert marker not in observe(code)


@pytest.fixture
def unix_servers(planted: Planted) -> Iterator[list[socket.socket]]:
    """A path socket (like ssh-agent's or D-Bus's), open to everyone, and an abstract one."""
    path = planted.root / "agent.sock"
    by_path = socket.socket(socket.AF_UNIX)
    by_path.bind(str(path))
    os.chmod(path, 0o777)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0moscopt-test-{uuid.uuid4().hex}")
    servers = [by_path, abstract]
    for server in servers:
        server.listen()
        server.settimeout(0.2)
    yield servers
    for server in servers:
        server.close()


def test_unix_sockets_are_unreachable(attack_mode: str, unix_servers: list[socket.socket]) -> None:
    addresses = [server.getsockname() for server in unix_servers]
    code = (
        GETFRAME_REBIND
        + f"import socket\nfor address in {addresses!r}:\n    try:\n"
        + "        s = socket.socket(socket.AF_UNIX)\n        s.connect(address)\n"
        + "        s.sendall(b'SSH_AGENTC_REQUEST_IDENTITIES')\n        print('connected')\n"
        + "    except OSError as exc:\n        print(type(exc).__name__)\n"
    )
    seen = observe(code)
    assert "connected" not in seen, seen
    for server in unix_servers:
        with pytest.raises(TimeoutError):
            server.accept()


def test_loopback_tcp_is_unreachable(attack_mode: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        port = server.getsockname()[1]
        code = (
            GETFRAME_REBIND
            + f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            + "print('connected')"
        )
        seen = observe(code)
        with pytest.raises(TimeoutError):
            server.accept()
    assert "connected" not in seen.replace("print('connected')", "")


def test_shared_memory_and_tmp_are_not_writable(attack_mode: str) -> None:
    name = f"moscopt-attack-{uuid.uuid4().hex}"
    code = (
        f"for d in ('/dev/shm', '/tmp', '/var/tmp', '/dev'):\n"
        f"    try:\n        open(d + '/{name}', 'w').write('x')\n        print(d, 'written')\n"
        "    except OSError as exc:\n        print(d, type(exc).__name__)\n"
    )
    seen = observe(code)
    assert "written" not in seen, seen
    for d in ("/dev/shm", "/tmp", "/var/tmp"):
        assert not os.path.exists(f"{d}/{name}")
