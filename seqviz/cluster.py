"""Where runs train: worker processes of a Dask cluster, never the web server's process.

By default the app starts a :class:`distributed.LocalCluster` of its own the first time a visitor trains (pages
that never train never start it): worker processes with one thread each, under Dask's nanny, which starts a new
worker when one dies. ``SEQVIZ_DASK_SCHEDULER=tcp://host:8786`` sends every run to an existing cluster instead
(``dask scheduler`` and ``dask worker`` on other machines, Dask's Helm chart, a cloud service); the app then
starts no workers of its own. ``SEQVIZ_TRAIN_WORKERS`` sets the local cluster's size.

How many local workers (:func:`local_worker_count`): one per core but one (the web server keeps a core for the
pages), at least one, and no more than the memory allows: each worker is budgeted
:data:`seqviz.limits.TRAIN_WORKER_MB` (a worker's measured peak training the largest preset, with a margin), after
:data:`seqviz.limits.TRAIN_WEB_MB` for the web server itself. A 1 GB host therefore gets one worker.

Nothing here imports streamlit or torch.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from seqviz import limits

SCHEDULER_ENV = "SEQVIZ_DASK_SCHEDULER"
WORKERS_ENV = "SEQVIZ_TRAIN_WORKERS"
CONNECT_TIMEOUT_S = 4.0  # seconds to reach a configured scheduler before training is called unavailable


class ClusterUnavailable(RuntimeError):
    """No cluster to train on (a configured scheduler cannot be reached, or local workers would not start)."""


def cpu_count() -> int:
    """Cores this process may use (its CPU affinity where the OS says, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def memory_mb() -> float:
    """Memory this host (or its container's cgroup limit, when lower) has, in MB."""
    import psutil  # a dependency of distributed

    total = psutil.virtual_memory().total
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError), open(path) as limit:
            total = min(total, int(limit.read().strip()))
    return total / 2**20


def local_worker_count(cores: int | None = None, memory: float | None = None, env: dict | None = None) -> int:
    """Workers of the app's own cluster: SEQVIZ_TRAIN_WORKERS if set (1 to 64), else cores - 1 and what memory
    allows, at least 1 (see the module's docstring)."""
    env = os.environ if env is None else env
    wanted = env.get(WORKERS_ENV, "").strip()
    if wanted:
        try:
            count = int(wanted)
        except ValueError:
            count = 0
        if 1 <= count <= 64:
            return count
    cores = cpu_count() if cores is None else cores
    memory = memory_mb() if memory is None else memory
    by_memory = int((memory - limits.TRAIN_WEB_MB) // limits.TRAIN_WORKER_MB)
    return max(1, min(cores - 1, by_memory))


class Cluster:
    """The cluster runs go to: a local one started on first use, or an existing one at ``address``.

    ``client()`` connects (or starts the local cluster) once and hands out the same
    :class:`distributed.Client`; it raises :class:`ClusterUnavailable` with the reason when it cannot.
    """

    def __init__(self, address: str | None = None, workers: int | None = None):
        self.address = address
        self.workers = workers  # local workers (None: local_worker_count())
        self._lock = threading.Lock()
        self._client = None
        self._local = None

    @classmethod
    def from_environment(cls) -> Cluster:
        return cls(address=os.environ.get(SCHEDULER_ENV, "").strip() or None)

    @property
    def external(self) -> bool:
        return self.address is not None

    def describe(self) -> str:
        if self.external:
            return f"the Dask cluster at {self.address}"
        count = self.workers or local_worker_count()
        return f"{count} worker process{'es' if count != 1 else ''} on this server"

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self):
        """The connected client (connecting or starting the local cluster first); raises ClusterUnavailable."""
        with self._lock:
            if self._client is not None:
                return self._client
            from distributed import Client, LocalCluster

            if self.external:
                try:
                    self._client = Client(self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
                except Exception as error:  # OSError, TimeoutError, a bad address's ValueError
                    raise ClusterUnavailable(
                        f"the Dask scheduler at {self.address} ({SCHEDULER_ENV}) cannot be reached: "
                        f"{type(error).__name__}: {error}"[:400]
                    ) from error
                return self._client
            try:
                self._local = LocalCluster(
                    n_workers=self.workers or local_worker_count(), threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
                    preload=["seqviz.worker"],  # torch loaded as each worker starts (seqviz.worker.dask_setup)
                )
                self._client = Client(self._local, set_as_default=False)
            except Exception as error:
                self._close_local()
                raise ClusterUnavailable(f"the training workers would not start: {type(error).__name__}: "
                                         f"{error}"[:400]) from error
            return self._client

    def slots(self) -> int:
        """Runs that can train at once now: the worker threads the scheduler knows (0 before connecting)."""
        client = self._client
        if client is None:
            return 0
        try:
            workers = client.scheduler_info(n_workers=-1).get("workers", {})
        except Exception:  # the connection is going
            return 0
        return sum(int(w.get("nthreads", 1)) for w in workers.values())

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.close(timeout=5)
                self._client = None
            self._close_local()

    def _close_local(self) -> None:
        if self._local is not None:
            with contextlib.suppress(Exception):
                self._local.close(timeout=10)
            self._local = None


@contextlib.contextmanager
def separate_processes(workers: int = 1, root: str | os.PathLike | None = None):
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes of one thread each on 127.0.0.1, started with
    the commands the README gives for other machines (the scale-out test and benchmarks/classroom.py use it).
    Yields (scheduler address, the worker commands' processes); stops them all on the way out. Each worker command
    runs in a process group of its own (its nanny and the worker process), killed whole."""
    import signal
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    dask = str(Path(sys.executable).with_name("dask"))
    address = f"tcp://127.0.0.1:{port}"
    run = dict(cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    scheduler = subprocess.Popen([dask, "scheduler", "--port", str(port), *common], **run)
    started = [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--nworkers", "1", *common],
                                start_new_session=True, **run) for _ in range(workers)]
    try:
        yield address, started
    finally:
        for worker in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)  # nothing of a worker's is kept: no graceful close needed
        scheduler.terminate()
        for process in [*started, scheduler]:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)

