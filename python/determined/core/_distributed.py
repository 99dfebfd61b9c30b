"""DistributedContext: ranks and small collectives (pickled Python objects) between the
processes of one trial, over plain TCP.

Determined carries these over ZMQ; det's package has the standard library only, so each group
is a star of TCP connections: its chief accepts one connection from every other member and
relays. They coordinate the Core API (which op, whether to preempt, one checkpoint's name), not
tensors: training frameworks have their own collectives for those.
"""

import os
import pickle
import socket
import struct
import time
from typing import Any, List, Optional, Tuple

# Determined's ports, which launchers may move through the environment (det's torch_distributed
# launcher does, so that two trials on one agent do not collide).
MAX_SLOTS_PER_AGENT = 16
INTER_TRAIN_PROCESS_COMM_PORT_1 = int(os.environ.get("INTER_TRAIN_PROCESS_COMM_PORT_1", "12360"))
INTER_TRAIN_PROCESS_COMM_PORT_2 = int(
    os.environ.get("INTER_TRAIN_PROCESS_COMM_PORT_2", INTER_TRAIN_PROCESS_COMM_PORT_1 + MAX_SLOTS_PER_AGENT)
)

# How long a worker keeps trying to reach its chief, which may still be importing its framework.
CONNECT_TIMEOUT_S = 300.0

_LENGTH = struct.Struct("!Q")


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj)
    return _LENGTH.pack(len(data)) + data


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        read = sock.recv_into(view[got:])
        if read == 0:
            raise ConnectionError("a process of the DistributedContext closed its connection (did it exit?)")
        got += read
    return bytes(buf)


def _receive(sock: socket.socket) -> Any:
    (n,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
    return pickle.loads(_read_exactly(sock, n))


def _listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen()
    return listener


def _connect(address: Tuple[str, int]) -> socket.socket:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            return socket.create_connection(address)
        except OSError:
            if time.monotonic() >= deadline:
                raise ConnectionError(
                    f"the chief of the DistributedContext did not listen on {address[0]}:{address[1]} "
                    f"within {CONNECT_TIMEOUT_S:.0f} s"
                ) from None
            time.sleep(0.1)


class _Star:
    """Members 0..size-1 of a group; member 0 holds a connection to each of the others."""

    def __init__(self, index: int, size: int, *, listener: Optional[socket.socket] = None,
                 address: Optional[Tuple[str, int]] = None) -> None:
        self._index = index
        self._peers: List[socket.socket] = []  # the chief's, by member index (none for itself)
        if index == 0:
            assert listener is not None
            by_index = {}
            with listener:
                while len(by_index) < size - 1:
                    conn, _ = listener.accept()
                    by_index[_receive(conn)] = conn
            self._peers = [by_index[i] for i in range(1, size)]
        else:
            assert address is not None
            self._chief = _connect(address)
            self._chief.sendall(_frame(index))
        for sock in self._peers if index == 0 else [self._chief]:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def gather(self, obj: Any) -> Optional[List]:
        if self._index == 0:
            return [obj, *(_receive(peer) for peer in self._peers)]
        self._chief.sendall(_frame(obj))
        return None

    def broadcast(self, obj: Any) -> Any:
        if self._index != 0:
            return _receive(self._chief)
        frame = _frame(obj)
        for peer in self._peers:
            peer.sendall(frame)
        return obj

    def close(self) -> None:
        for sock in self._peers if self._index == 0 else [self._chief]:
            sock.close()


class DistributedContext:
    """The ranks of this process in its trial and collectives between the trial's processes.

    rank/size: among all processes; local_rank/local_size: among those on this machine;
    cross_rank/cross_size: this machine among the trial's machines. chief_ip (where rank 0 runs)
    is needed when the processes span machines. The collectives listen on pub_port + port_offset
    (on the chief); pull_port and force_tcp are accepted for Determined's signature only: one TCP
    connection per process carries both directions here.
    """

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        cross_size: int,
        chief_ip: Optional[str] = None,
        pub_port: int = INTER_TRAIN_PROCESS_COMM_PORT_1,
        pull_port: int = INTER_TRAIN_PROCESS_COMM_PORT_2,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        if local_size != size and chief_ip is None:
            raise AssertionError(
                f"This is a distributed job (local_size {local_size} != size {size}) but no chief_ip "
                "was provided. When cross_size > 1, the chief_ip parameter is required."
            )
        # On one machine the chief is always reached over loopback.
        self._chief_ip = chief_ip if local_size != size else "127.0.0.1"
        self._global: Optional[_Star] = None
        self._local: Optional[_Star] = None
        self._closed = False
        if size < 2:
            return
        port = pub_port + port_offset
        if rank == 0:
            host = "0.0.0.0" if local_size != size else "127.0.0.1"
            self._global = _Star(0, size, listener=_listen(host, port))
        else:
            self._global = _Star(rank, size, address=(self._chief_ip, port))
        # Each machine's local chief listens on a free loopback port and names it in one
        # allgather, which every process joins even when its machine has no local group.
        listener = _listen("127.0.0.1", 0) if local_size > 1 and local_rank == 0 else None
        announced = self.allgather((cross_rank, listener.getsockname()[1]) if listener else None)
        if listener is not None:
            self._local = _Star(0, local_size, listener=listener)
        elif local_size > 1:
            local_port = next(a[1] for a in announced if a is not None and a[0] == cross_rank)
            self._local = _Star(local_rank, local_size, address=("127.0.0.1", local_port))

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: Optional[str] = None) -> "DistributedContext":
        """From an initialized horovod module (`import horovod.torch as hvd; hvd.init()`)."""
        return cls(
            rank=hvd.rank(),
            size=hvd.size(),
            local_rank=hvd.local_rank(),
            local_size=hvd.local_size(),
            cross_rank=hvd.cross_rank(),
            cross_size=hvd.cross_size(),
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
        )

    @classmethod
    def _from_launcher_env(cls, local_size: str, cross_rank: str, cross_size: str,
                           chief_ip: Optional[str]) -> "DistributedContext":
        """RANK and WORLD_SIZE, LOCAL_RANK, and the launcher's own names for the rest."""
        env = os.environ
        return cls(
            rank=int(env["RANK"]),
            size=int(env["WORLD_SIZE"]),
            local_rank=int(env["LOCAL_RANK"]),
            local_size=int(env[local_size]),
            cross_rank=int(env[cross_rank]),
            cross_size=int(env[cross_size]),
            chief_ip=chief_ip or env.get("DET_CHIEF_IP"),
        )

    @classmethod
    def from_deepspeed(cls, chief_ip: Optional[str] = None) -> "DistributedContext":
        """From DeepSpeed's environment variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_SIZE,
        CROSS_RANK, CROSS_SIZE)."""
        return cls._from_launcher_env("LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE", chief_ip)

    @classmethod
    def from_torch_distributed(cls, chief_ip: Optional[str] = None) -> "DistributedContext":
        """From torch.distributed's environment variables, which det's launcher
        (`python3 -m determined.launch.torch_distributed`) sets for each process."""
        return cls._from_launcher_env("LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", chief_ip)

    @classmethod
    def from_tf_config(cls) -> Any:
        raise NotImplementedError(
            "DistributedContext.from_tf_config() is not available on det: det has no TensorFlow "
            "launcher to set TF_CONFIG; launch with determined.launch.torch_distributed and use "
            "DistributedContext.from_torch_distributed()."
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for group in (self._local, self._global):
            if group is not None:
                group.close()

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_num_agents(self) -> int:
        return self.cross_size

    def gather(self, stuff: Any) -> Optional[List]:
        """The chief gets everyone's `stuff` by rank; the others get None once it has."""
        if self.size < 2:
            return [stuff]
        assert self._global is not None
        out = self._global.gather(stuff)
        # As in Determined, no worker leaves before the chief has everything.
        self._global.broadcast(None)
        return out

    def gather_local(self, stuff: Any) -> Optional[List]:
        """As gather(), among this machine's processes to its local chief."""
        if self.local_size < 2:
            return [stuff]
        assert self._local is not None
        out = self._local.gather(stuff)
        self._local.broadcast(None)
        return out

    def allgather(self, stuff: Any) -> List:
        """Everyone gets everyone's `stuff`, by rank."""
        if self.size < 2:
            return [stuff]
        assert self._global is not None
        return self._global.broadcast(self._global.gather(stuff))

    def allgather_local(self, stuff: Any) -> List:
        """As allgather(), among this machine's processes, by local rank."""
        if self.local_size < 2:
            return [stuff]
        assert self._local is not None
        return self._local.broadcast(self._local.gather(stuff))

    def broadcast(self, stuff: Any) -> Any:
        """Everyone gets the chief's `stuff`."""
        if self.size < 2:
            return stuff
        assert self._global is not None
        return self._global.broadcast(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """Everyone on this machine gets its local chief's `stuff`."""
        if self.local_size < 2:
            return stuff
        assert self._local is not None
        return self._local.broadcast(stuff)


class DummyDistributedContext(DistributedContext):
    """A trial of one process."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
