"""reactord serving TLS itself (--tls-cert, --tls-key) with a certificate of its own CA: the
clients trust it through their `ssl` option, over https:// and wss://, and refuse it without."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest
from conftest import run

from reactor_client import AsyncClient, Client, ReactorConnectionError

INCREMENT = {"type": "increment", "path": "/n"}


@pytest.fixture
def tls_server(reactord, tmp_path):
    """A reactord speaking only TLS, with a self-signed certificate for 127.0.0.1: (its https://
    URL, an SSLContext that trusts the certificate)."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )
    server = reactord("--tls-cert", str(cert), "--tls-key", str(key))
    return f"https://127.0.0.1:{server.port}", ssl.create_default_context(cafile=str(cert))


def test_client_over_https_with_a_private_ca(tls_server):
    url, context = tls_server
    with Client(url, timeout=5, ssl=context) as client:
        assert client.fire(INCREMENT) == 1
        assert client.fire(INCREMENT) == 2
        assert client.state_with_version() == (2, {"n": 2})
    with pytest.raises(ReactorConnectionError) as caught:
        Client(url, timeout=5).state()  # the system's CAs do not know this one
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


def test_async_client_and_subscription_over_https_and_wss(tls_server):
    url, context = tls_server

    async def main():
        async with AsyncClient(url, timeout=5, ssl=context) as client:
            assert await client.fire(INCREMENT) == 1
            async with client.subscribe() as sub:
                assert await sub.__anext__() == (1, {"n": 1})
                assert await sub.fire(INCREMENT) == 2
                assert sub.state == {"n": 2}
            async with Client(url, timeout=5).subscribe(ssl=context) as sub:  # the subscription's own
                assert await sub.__anext__() == (2, {"n": 2})
        async with AsyncClient(url, timeout=5) as untrusting:
            with pytest.raises(ReactorConnectionError):
                await untrusting.state()
            with pytest.raises(ReactorConnectionError):
                async with untrusting.subscribe():
                    pass

    run(main())


def test_ssl_with_a_plain_http_url_is_refused():
    context = ssl.create_default_context()
    for make in (Client, AsyncClient):
        with pytest.raises(ValueError):
            make("http://127.0.0.1:7070", ssl=context)
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:7070").subscribe(ssl=context)
