"""Where runs train: worker processes of a Dask cluster, never the web server's process.

By default the app starts a :class:`distributed.LocalCluster` of its own the first time a visitor trains (pages
that never train never start it): worker processes with one thread each, under Dask's nanny, which starts a new
worker when one dies. ``SEQVIZ_DASK_SCHEDULER=tls://host:8786`` sends every run to an existing cluster instead
(``dask scheduler`` and ``dask worker`` on other machines, Dask's Helm chart, a cloud service); the app then
starts no workers of its own. ``SEQVIZ_TRAIN_WORKERS`` sets the local cluster's size.

Every worker offers one ``train`` resource (``--resources train=1``; the local cluster's workers too) and every run
is submitted with ``resources={"train": 1}``, so the scheduler places one run per worker and queues the rest.

An existing cluster on a network is reached over TLS (a ``tls://`` address) with Dask's own security
(:class:`distributed.Security`): a scheduler without it has its workers run any Python from whoever reaches its
port (``tcp://`` still works, for a network only the cluster's machines share, as in hosting/compose.yaml). The
app's certificates are Dask's configuration, which Dask also reads from the environment (:data:`TLS_SETTINGS`): the
cluster's CA certificate and a certificate it signed for the app, with its key. Dask's TLS is mutual: the scheduler
refuses a client whose certificate that CA did not sign. The local cluster listens on 127.0.0.1, without TLS.

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
# A local worker that died is started again by its nanny; Dask's LocalCluster closes it for good if it has not come
# back within distributed.deploy.lost-worker-timeout (15 s), which a new worker loading torch on a busy host misses.
LOST_WORKER_TIMEOUT = "10 minutes"
RESOURCES = {"train": 1}  # each worker's; a run takes {"train": 1}, so one run trains on a worker at a time
# The app's TLS settings: Dask's configuration keys and the environment variables Dask reads them from.
TLS_SETTINGS = {
    "distributed.comm.tls.ca-file": "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",  # the cluster's CA certificate
    "distributed.comm.tls.client.cert": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",  # the app's certificate
    "distributed.comm.tls.client.key": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",  # its key (or in the cert file)
}


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


def client_security(address: str, security=None):
    """The :class:`distributed.Security` the app connects to ``address`` with: ``security``, else Dask's
    configuration (:data:`TLS_SETTINGS`). For a ``tls://`` address it raises :class:`ClusterUnavailable`, saying
    what is missing, when the CA certificate, the app's certificate or its key is not given or not there."""
    from distributed import Security

    security = security if security is not None else Security()
    if not address.startswith("tls://"):
        return security
    ca, cert, key = security.tls_ca_file, security.tls_client_cert, security.tls_client_key
    missing = []
    for what, value, key_name in [("the cluster's CA certificate", ca, "distributed.comm.tls.ca-file"),
                                  ("the app's certificate", cert, "distributed.comm.tls.client.cert")]:
        if not value:
            missing.append(f"{what} ({TLS_SETTINGS[key_name]})")
        elif "\n" not in value and not os.path.isfile(value):  # Dask also takes the PEM text itself
            missing.append(f"{what} (no file {value})")
    if key and "\n" not in key and not os.path.isfile(key):
        missing.append(f"the app's key (no file {key})")
    elif not key and cert and not missing and not _holds_key(cert):
        missing.append(f"the app's key ({TLS_SETTINGS['distributed.comm.tls.client.key']}, or in the certificate's "
                       "file)")
    if missing:
        raise ClusterUnavailable(f"the Dask scheduler at {address} ({SCHEDULER_ENV}) needs TLS certificates, and "
                                 f"these are missing: {'; '.join(missing)}"[:400])
    return security


def _holds_key(cert: str) -> bool:
    if "\n" in cert:
        return "PRIVATE KEY" in cert
    with contextlib.suppress(OSError, UnicodeDecodeError), open(cert) as pem:
        return "PRIVATE KEY" in pem.read()
    return False


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
    :class:`distributed.Client`; it raises :class:`ClusterUnavailable` with the reason when it cannot. ``security``
    (a :class:`distributed.Security`) is the existing cluster's; None: Dask's configuration (see the module).
    """

    def __init__(self, address: str | None = None, workers: int | None = None, security=None):
        self.address = address
        self.workers = workers  # local workers (None: local_worker_count())
        self.security = security
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
                security = client_security(self.address, self.security)  # raises ClusterUnavailable
                try:
                    self._client = Client(self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False,
                                          security=security)
                except Exception as error:  # OSError, TimeoutError, a bad address's ValueError
                    raise ClusterUnavailable(
                        f"the Dask scheduler at {self.address} ({SCHEDULER_ENV}) cannot be reached: "
                        f"{type(error).__name__}: {error}"[:400]
                    ) from error
                return self._client
            import dask

            dask.config.set({"distributed.deploy.lost-worker-timeout": LOST_WORKER_TIMEOUT})  # read when one is lost
            # Dask's statistical profiler samples a worker's threads every 10 ms in its event loop, which holds the
            # GIL the training thread needs; nobody reads its profiles here (issue 26).
            dask.config.set({"distributed.worker.profile.enabled": False})
            try:
                self._local = LocalCluster(
                    n_workers=self.workers or local_worker_count(), threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
                    resources=RESOURCES,  # one run per worker at a time
                    preload=["seqviz.worker"],  # torch loaded as each worker starts (seqviz.worker.dask_setup)
                )
                self._client = Client(self._local, set_as_default=False)
            except Exception as error:
                self._close_local()
                raise ClusterUnavailable(f"the training workers would not start: {type(error).__name__}: "
                                         f"{error}"[:400]) from error
            return self._client

    def slots(self) -> int:
        """Runs that can train at once now: the ``train`` resources of the workers the scheduler knows (0 before
        connecting). A worker started without ``--resources train=1`` counts 0: no run is ever placed on it."""
        client = self._client
        if client is None:
            return 0
        try:
            workers = client.scheduler_info(n_workers=-1).get("workers", {})
        except Exception:  # the connection is going
            return 0
        return sum(int((w.get("resources") or {}).get("train", 0)) for w in workers.values())

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
def separate_processes(workers: int = 1, root: str | os.PathLike | None = None, tls: tuple | None = None):
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes of one thread and one ``train`` resource each
    on 127.0.0.1, started with the commands docs/training.md gives for other machines (the scale-out tests and
    benchmarks/classroom.py use it). ``tls``: (CA file, certificate, key) for the scheduler and the workers, which
    then speak TLS only (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``). Yields (scheduler address, the worker
    commands' processes); stops them all on the way out. Each worker command runs in a process group of its own
    (its nanny and the worker process), killed whole."""
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
    address = f"{'tls' if tls else 'tcp'}://127.0.0.1:{port}"
    run = dict(cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    if tls:
        ca, cert, key = (str(path) for path in tls)
        common += ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]
    worker_command = [dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--resources", "train=1"]
    started: list = []
    scheduler = subprocess.Popen([dask, "scheduler", "--port", str(port), *(["--protocol", "tls"] if tls else []),
                                  *common], **run)
    try:
        for _ in range(workers):
            started.append(subprocess.Popen([*worker_command, *common], start_new_session=True, **run))
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
