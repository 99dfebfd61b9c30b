"""python3 -m determined.launch.wrap_rank [--no-redirect-stdio] RANK [--] CMD...

Runs CMD and prefixes each line it prints (stdout and stderr) with "[rank=RANK] ", so that the
trial's logs say which process wrote what. RANK is a number or a comma-separated list of
environment variables tried in order. SIGTERM and SIGINT are passed on to CMD, whose exit code
becomes this one's (128 + N when signal N ended it).
"""

import ctypes
import io
import os
import re
import signal
import subprocess
import sys
import threading
from typing import List, Optional

_LINE_END = re.compile(rb"[\r\n]")
# A line longer than this is cut, as Determined's log shipper does.
_LINE_LIMIT = io.DEFAULT_BUFFER_SIZE - 1


def _die_with_parent() -> None:
    """In CMD's process: SIGKILL it when this wrapper dies, so that a launcher that must kill a
    rank outright (SIGKILL cannot be passed on) kills its command too."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def forward_lines(source: int, target: int, prefix: bytes) -> None:
    """Copies `source` to `target` line by line with `prefix`; a '\\r' (a progress bar's
    redraw) ends a line too."""
    pending = b""
    while True:
        chunk = os.read(source, 65536)
        if not chunk:
            break
        pending += chunk
        lines = _LINE_END.split(pending)
        pending = lines.pop()
        while len(pending) > _LINE_LIMIT:
            lines.append(pending[:_LINE_LIMIT])
            pending = pending[_LINE_LIMIT:]
        if lines:
            os.write(target, b"".join(prefix + line + b"\n" for line in lines))
    if pending:
        os.write(target, prefix + pending + b"\n")


def _rank_of(spec: str) -> Optional[int]:
    if spec.isdigit():
        return int(spec)
    for name in spec.split(","):
        if name in os.environ:
            return int(os.environ[name])
    return None


def main(argv: List[str]) -> int:
    args = list(argv)
    # Determined's flag; det has no container log files to redirect to, so it changes nothing.
    if args and args[0] == "--no-redirect-stdio":
        args.pop(0)
    if args[1:2] == ["--"]:
        del args[1]
    if len(args) < 2:
        print("usage: python3 -m determined.launch.wrap_rank [--no-redirect-stdio] RANK [--] CMD...", file=sys.stderr)
        return 2
    rank = _rank_of(args[0])
    if rank is None:
        print(f"rank environment variable is set to {args[0]}, but it is not in os.environ", file=sys.stderr)
        return 1
    prefix = f"[rank={rank}] ".encode()
    proc = subprocess.Popen(args[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _: proc.send_signal(s))
    relays = [threading.Thread(target=forward_lines, args=(pipe.fileno(), out, prefix))
              for pipe, out in ((proc.stdout, sys.stdout.fileno()), (proc.stderr, sys.stderr.fileno()))]
    for relay in relays:
        relay.start()
    for relay in relays:
        relay.join()
    code = proc.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
