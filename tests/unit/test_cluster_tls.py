"""A cluster reached over TLS (seqviz.cluster), as docs/training.md sets one up: a throwaway CA and a certificate
it signed, made with docs/training.md's openssl commands; a `dask scheduler` and a `dask worker` (`--resources train=1`)
that speak TLS only, on 127.0.0.1; the app's client given the certificates through Dask's own environment variables.

A run trains there; a client that speaks plain TCP, one with no certificate and one whose certificate another CA
signed are all refused. A `tls://` address without certificates makes training unavailable and says what is missing.

Every process started here listens on 127.0.0.1 and is stopped by its PID at the end; each wait is bounded.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
from pathlib import Path

import dask
import psutil
import pytest
from distributed import Client, Security

from seqviz.checkpoints import load_bytes
from seqviz.cluster import SCHEDULER_ENV, TLS_SETTINGS, Cluster, ClusterUnavailable, client_security, separate_processes
from seqviz.runs import RunSpec


def make_ca_and_certificate(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """docs/training.md's commands: a CA (ca.pem, ca.key) and a certificate it signed (NAME.pem, NAME.key)."""
    folder.mkdir(parents=True, exist_ok=True)
    commands = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name} CA",
         "-keyout", "ca.key", "-out", "ca.pem"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", f"{name}.key", "-out", f"{name}.csr"],
        ["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-days", "2", "-out", f"{name}.pem"],
    ]
    for command in commands:
        subprocess.run(command, cwd=folder, check=True, capture_output=True, timeout=30)
    return folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}.key"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls")
    return {"cluster": make_ca_and_certificate(root / "cluster", "cluster"),
            "stranger": make_ca_and_certificate(root / "stranger", "stranger")}  # another CA, another certificate


def test_a_tls_address_without_certificates_is_unavailable_and_says_what_is_missing(tmp_path):
    address = "tls://127.0.0.1:1"
    none = Security(tls_ca_file=None, tls_client_cert=None, tls_client_key=None)
    began = time.monotonic()
    with pytest.raises(ClusterUnavailable) as refused:
        Cluster(address=address, security=none).client()
    assert time.monotonic() - began < 2  # said at once, without trying the network
    message = str(refused.value)
    assert address in message and SCHEDULER_ENV in message and "needs TLS certificates" in message
    assert "the cluster's CA certificate (DASK_DISTRIBUTED__COMM__TLS__CA_FILE)" in message
    assert "the app's certificate (DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT)" in message

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    cert_only = tmp_path / "app.pem"
    cert_only.write_text("-----BEGIN CERTIFICATE-----\n")  # no key in it, and none named
    with pytest.raises(ClusterUnavailable, match=r"the app's key \(DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY"):
        client_security(address, Security(tls_ca_file=str(ca), tls_client_cert=str(cert_only), tls_client_key=None))
    with pytest.raises(ClusterUnavailable, match=f"no file {tmp_path / 'gone.pem'}"):
        client_security(address, Security(tls_ca_file=str(ca), tls_client_cert=str(tmp_path / "gone.pem"),
                                          tls_client_key=None))
    assert client_security("tcp://127.0.0.1:1", none) is none  # a tcp:// address asks for nothing


@pytest.mark.timeout(120)
def test_runs_train_on_a_tls_cluster_and_clients_without_its_certificates_are_refused(certificates, monkeypatch):
    ca, cert, key = certificates["cluster"]
    _, stranger_cert, stranger_key = certificates["stranger"]
    with separate_processes(workers=1, tls=(ca, cert, key)) as (address, workers):
        assert address.startswith("tls://127.0.0.1:")
        # The app's way: the scheduler from SEQVIZ_DASK_SCHEDULER, the certificates from Dask's environment variables.
        monkeypatch.setenv(SCHEDULER_ENV, address)
        given = dict(zip(TLS_SETTINGS.values(), map(str, (ca, cert, key)), strict=True))
        dask.config.refresh(env={**os.environ, **given})
        cluster = Cluster.from_environment()
        try:
            deadline = time.monotonic() + 30
            while True:  # the scheduler is still starting
                try:
                    client = cluster.client()
                    break
                except ClusterUnavailable:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            while cluster.slots() < 1 and time.monotonic() < deadline:  # the worker is still starting
                time.sleep(0.3)
            assert cluster.slots() == 1  # its one "train" resource
            def train_on_worker(spec):  # defined here, so it travels by value (the worker cannot import tests)
                from seqviz import driver

                return driver.run(driver.from_spec(spec, "test")).checkpoint, os.getpid()

            spec = RunSpec(task="emails", family="lstm", embedding=4, hidden=4, steps=10, batch_size=8)
            future = client.submit(train_on_worker, spec, resources={"train": 1}, pure=False)
            data, pid = future.result(timeout=90)
            checkpoint = load_bytes(data)
            assert checkpoint.task == "emails" and checkpoint.meta["spec"]["steps"] == 10
            command = psutil.Process(workers[0].pid)
            assert pid in {command.pid, *(p.pid for p in command.children(recursive=True))} and pid != os.getpid()
        finally:
            cluster.close()
            dask.config.refresh()  # back to this process's own environment: no certificates

        port = int(address.rsplit(":", 1)[1])
        # Plain TCP to the TLS port: no Dask conversation.
        began = time.monotonic()
        with pytest.raises(OSError):
            Client(f"tcp://127.0.0.1:{port}", timeout=3, set_as_default=False)
        assert time.monotonic() - began < 15
        # TLS that trusts the cluster's CA but shows no certificate: the scheduler ends the connection.
        context = ssl.create_default_context(cafile=str(ca))
        context.check_hostname = False
        with (pytest.raises((ssl.SSLError, ConnectionError)),
              socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls):
            tls.sendall(b"\0" * 8)
            if not tls.recv(1):
                raise ConnectionResetError("closed by the scheduler")
        # A certificate another CA signed (trusting the cluster's CA, so only the scheduler can say no).
        stranger = Security(tls_ca_file=str(ca), tls_client_cert=str(stranger_cert),
                            tls_client_key=str(stranger_key))
        began = time.monotonic()
        with pytest.raises(ClusterUnavailable, match=r"cannot be reached: .*SSL"):  # the scheduler ends the handshake
            Cluster(address=address, security=stranger).client()
        assert time.monotonic() - began < 15
