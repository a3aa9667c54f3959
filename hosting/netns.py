"""A loopback port on this machine forwarded into another network namespace (a container's, or one made with
`unshare --net`), where the server listens on that namespace's own loopback.

Used by scripts/check-container (a container run with --network none has no published port) and by the proxy
tests (nginx on port 80 in a namespace of its own). Needs root (setns). Standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading

CLONE_NEWNET = 0x40000000


def wait_until_apart(pid: int, seconds: float = 10.0) -> None:
    """Wait until process ``pid`` is in a network namespace other than this one's: `unshare --net` has made its
    own. (Right after starting `unshare`, its process may not have yet, and nsenter would enter ours.)"""
    import time

    ours = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + seconds
    while os.readlink(f"/proc/{pid}/ns/net") == ours:
        if time.monotonic() > deadline:
            raise OSError(f"process {pid} is still in this network namespace after {seconds} s")
        time.sleep(0.01)


class Forwarder:
    """127.0.0.1:<self.port> here -> 127.0.0.1:``port`` in the network namespace of process ``pid``.

    The listening socket is made in this namespace; then one thread enters the other namespace (setns changes
    the calling thread only) and makes every upstream connection there, one pair of pumping threads each."""

    def __init__(self, pid: int, port: int):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._target, self._pid, self._stop = port, pid, threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error:
            self.listener.close()
            raise OSError(f"cannot enter the network namespace of process {pid}: {self._error}")

    def _serve(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/proc/{self._pid}/ns/net") as ns:
                if libc.setns(ns.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        self.listener.settimeout(0.5)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target), timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
            with contextlib.suppress(OSError):
                source.shutdown(socket.SHUT_RD)

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(5)
