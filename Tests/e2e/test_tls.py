"""reactord speaking TLS itself (--tls-cert, --tls-key, --tls-port), checked with independent
clients: curl --cacert, Python's ssl and `websockets` over wss://, curl -N for SSE. Certificates
are made here (openssl req -x509, and Python's cryptography for the expired one): a reload with
SIGHUP under a live subscriber, a bad file on reload, the wrong protocol on each port, a stalled
handshake, and a certificate that cannot serve refused at start with a clear message."""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import signal
import socket
import ssl
import struct
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from websockets.sync.client import connect

from conftest import HOST, curl, run_reactord, wait_until


def make_certificate(directory, name: str = "server", days: int = 2) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key: (cert path, key path)."""
    cert, key = directory / f"{name}.pem", directory / f"{name}-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", str(days), "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def fingerprint(port: int, cafile: str | None = None) -> str:
    """SHA-256 of the certificate a new TLS connection to `port` is shown."""
    context = ssl.create_default_context(cafile=cafile) if cafile else ssl._create_unverified_context()
    with socket.create_connection((HOST, port), timeout=5) as sock, context.wrap_socket(sock, server_hostname=HOST) as tls:
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def file_fingerprint(cert: str) -> str:
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    return hashlib.sha256(der).hexdigest()


def https(port: int, cafile: str, method: str = "GET", path: str = "/state", body=None):
    context = ssl.create_default_context(cafile=cafile)
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"https://{HOST}:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, context=context, timeout=5) as response:
        return response.status, json.loads(response.read() or b"null")


def tls_port(server) -> int:
    return int(server.wait_for_log(r"tls=127\.0\.0\.1:(\d+)").group(1))


@pytest.fixture
def pair(tmp_path):
    return make_certificate(tmp_path)


def test_curl_reads_and_fires_over_https(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    assert tls_port(server) == server.port, "without --tls-port, TLS is spoken on --port"
    fired = curl("-sS", "--cacert", cert, "-H", "Content-Type: application/json", "-d", '{"type":"increment","path":"/n","by":2}',
                 f"https://127.0.0.1:{server.port}/events")
    assert fired.returncode == 0 and json.loads(fired.stdout) == {"version": 1}, fired.stderr
    verbose = curl("-sS", "-v", "--cacert", cert, f"https://127.0.0.1:{server.port}/state")
    assert json.loads(verbose.stdout) == {"n": 2}
    assert b"ALPN: server accepted http/1.1" in verbose.stderr
    for version in ("--tlsv1.2", "--tlsv1.3"):
        pinned = curl("-sS", "--cacert", cert, version, "--tls-max", version[-3:], f"https://127.0.0.1:{server.port}/livez")
        assert pinned.returncode == 0, (version, pinned.stderr)
    old = curl("-sS", "--cacert", cert, "--tls-max", "1.1", f"https://127.0.0.1:{server.port}/livez")
    assert old.returncode != 0, "TLS 1.1 is refused"


def test_websocket_over_wss_gets_the_snapshot_and_patches(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    context = ssl.create_default_context(cafile=cert)
    with connect(f"wss://{HOST}:{server.port}/subscribe", ssl=context, subprotocols=["reactor.v1"], open_timeout=5) as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "snapshot"
        https(server.port, cert, "POST", "/events", {"type": "set", "path": "/text", "value": "y" * 20000})
        patch = json.loads(ws.recv(timeout=5))
        assert patch["version"] == 1 and patch["ops"][0]["value"] == "y" * 20000
        ws.send(json.dumps({"type": "fire", "id": "w", "event": {"type": "increment", "path": "/n"}}))
        answers = [json.loads(ws.recv(timeout=5)) for _ in range(2)]
        assert {"type": "ack", "id": "w", "version": 2} in answers


def test_server_sent_events_over_tls(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    stream = subprocess.Popen(["curl", "-sS", "-N", "--cacert", cert, f"https://127.0.0.1:{server.port}/stream"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = b""
        deadline = time.monotonic() + 5
        while b"event: snapshot" not in seen and time.monotonic() < deadline:
            seen += stream.stdout.read1(4096)
        https(server.port, cert, "POST", "/events", {"type": "increment", "path": "/n"})
        while b"event: patch" not in seen and time.monotonic() < deadline:
            seen += stream.stdout.read1(4096)
        assert b"event: snapshot" in seen and b"event: patch" in seen, seen
    finally:
        stream.kill()
        stream.wait(5)


def test_plain_http_and_tls_side_by_side_and_each_port_says_what_it_speaks(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--tls-port", "0")
    secure = tls_port(server)
    assert secure != server.port
    assert https(secure, cert, "POST", "/events", {"type": "increment", "path": "/n"}) == (200, {"version": 1})
    with urllib.request.urlopen(f"http://{HOST}:{server.port}/state", timeout=5) as response:
        assert json.loads(response.read()) == {"n": 1}
    # Plain HTTP on the TLS port: a 400 problem in plaintext, then the connection closes.
    with socket.create_connection((HOST, secure), timeout=5) as sock:
        sock.sendall(b"GET /state HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 ") and b"application/problem+json" in answer
    assert b"this port speaks TLS" in answer
    # A TLS handshake on the plain port: a 400 saying it speaks plain HTTP (never a hang).
    context = ssl._create_unverified_context()
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(sock, server_hostname=HOST)
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(bytes.fromhex("160301002e") + b"\x01" + b"\x00" * 45)
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"plain HTTP" in answer


def test_sighup_reloads_the_certificate_and_keeps_open_connections(reactord, tmp_path):
    live_cert, live_key = str(tmp_path / "live.pem"), str(tmp_path / "live-key.pem")
    first, first_key = make_certificate(tmp_path, "first")
    second, second_key = make_certificate(tmp_path, "second")
    for source, target in ((first, live_cert), (first_key, live_key)):
        open(target, "w").write(open(source).read())
    server = reactord("--tls-cert", live_cert, "--tls-key", live_key)
    assert fingerprint(server.port) == file_fingerprint(first)
    context = ssl.create_default_context(cafile=first)
    with connect(f"wss://{HOST}:{server.port}/subscribe", ssl=context, open_timeout=5) as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "snapshot"
        for source, target in ((second, live_cert), (second_key, live_key)):
            open(target, "w").write(open(source).read())
        server.signal(signal.SIGHUP)
        server.wait_for_log(r"TLS certificate reloaded")
        assert fingerprint(server.port) == file_fingerprint(second), "new handshakes use the new pair"
        https(server.port, second, "POST", "/events", {"type": "increment", "path": "/n"})
        assert json.loads(ws.recv(timeout=5))["version"] == 1, "the subscriber that came before the reload is still served"
        # A bad pair on reload is logged, and the one in use stays.
        open(live_key, "w").write(open(first_key).read())
        server.signal(signal.SIGHUP)
        server.wait_for_log(r"not the key of the certificate.*TLS certificate not reloaded")
        assert fingerprint(server.port) == file_fingerprint(second)
        https(server.port, second, "POST", "/events", {"type": "increment", "path": "/n"})
        assert json.loads(ws.recv(timeout=5))["version"] == 2


def test_a_stalled_handshake_is_dropped_at_the_request_timeout(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--request-timeout", "1")
    with socket.create_connection((HOST, server.port), timeout=10) as sock:
        sock.sendall(bytes.fromhex("1603010200"))  # a record header, then nothing
        started = time.monotonic()
        assert sock.recv(4096) == b""
        assert time.monotonic() - started < 5
    assert https(server.port, cert)[0] == 200, "the server serves others meanwhile"


def test_the_connection_limit_answers_503_over_tls_too(reactord, pair):
    """A refusal can only go out once the handshake is done: over TLS it answers the client's
    first request, as a plain connection's does at once (before, curl saw the connection drop)."""
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--max-connections", "1")
    context = ssl.create_default_context(cafile=cert)
    with socket.create_connection((HOST, server.port), timeout=5) as sock, context.wrap_socket(sock, server_hostname=HOST):
        refused = curl("-sS", "-i", "--cacert", cert, f"https://127.0.0.1:{server.port}/state")
        assert refused.returncode == 0, refused.stderr
        head, _, body = refused.stdout.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503"), head
        assert b"application/problem+json" in head and json.loads(body)["type"] == "/problems/too-many-connections", refused.stdout
    def served() -> bool:
        try:
            return https(server.port, cert)[0] == 200
        except urllib.error.HTTPError as refusal:  # the server has not seen the first one go yet
            assert refusal.code == 503, refusal
            return False

    wait_until(served, 5, message="served again once the first connection left")


def test_refusals_waiting_for_their_handshakes_are_bounded(reactord, pair):
    """Refused connections are answered once their handshakes are done, and each holds a TLS
    session meanwhile: past 64 at a time, more are closed at once rather than held to the timeout."""
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--max-connections", "1")
    context = ssl.create_default_context(cafile=cert)
    with socket.create_connection((HOST, server.port), timeout=5) as sock, context.wrap_socket(sock, server_hostname=HOST):
        silent = [socket.create_connection((HOST, server.port), timeout=5) for _ in range(100)]
        try:
            closed = 0
            deadline = time.monotonic() + 3
            for connection in silent:
                connection.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    if connection.recv(1) == b"":
                        closed += 1
                except ConnectionResetError:
                    closed += 1
                except socket.timeout:
                    pass
            assert closed >= 100 - 64, f"{closed} of 100 silent refused connections closed within 3 s"
        finally:
            for connection in silent:
                connection.close()
        # Once the silent ones are gone, refusals are answered again.
        wait_until(lambda: curl("-sS", "-i", "--cacert", cert, f"https://127.0.0.1:{server.port}/state").stdout.startswith(b"HTTP/1.1 503"),
                   5, message="a refusal answered 503 again")


def test_a_certificate_that_cannot_serve_is_refused_at_start(tmp_path, pair):
    cert, key = pair
    other_cert, other_key = make_certificate(tmp_path, "other")
    mismatched = run_reactord("serve", "--port", "0", "--tls-cert", cert, "--tls-key", other_key)
    assert mismatched.returncode != 0 and "is not the key of the certificate" in mismatched.stderr, mismatched.stderr
    missing = run_reactord("serve", "--port", "0", "--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", key)
    assert missing.returncode != 0 and "cannot read the TLS certificate file" in missing.stderr, missing.stderr
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    unreadable = run_reactord("serve", "--port", "0", "--tls-cert", str(garbage), "--tls-key", key)
    assert unreadable.returncode != 0 and "holds no PEM certificate" in unreadable.stderr, unreadable.stderr
    alone = run_reactord("serve", "--port", "0", "--tls-cert", cert)
    assert alone.returncode != 0 and "tls-cert and tls-key go together" in alone.stderr, alone.stderr

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    expired = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=30))
               .not_valid_after(now - datetime.timedelta(days=1)).sign(private, hashes.SHA256()))
    (tmp_path / "expired.pem").write_bytes(expired.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "expired-key.pem").write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                                     serialization.NoEncryption()))
    old = run_reactord("serve", "--port", "0", "--tls-cert", str(tmp_path / "expired.pem"), "--tls-key", str(tmp_path / "expired-key.pem"))
    assert old.returncode != 0 and re.search(r"expired on \d{4}-\d\d-\d\d", old.stderr), old.stderr


def test_the_tls_settings_come_from_the_environment_and_the_config_file(reactord, pair, tmp_path):
    cert, key = pair
    from_env = reactord(env={"REACTORD_TLS_CERT": cert, "REACTORD_TLS_KEY": key})
    assert https(from_env.port, cert)[0] == 200
    config = tmp_path / "reactord.json"
    config.write_text(json.dumps({"tlsCert": cert, "tlsKey": key, "tlsPort": 0}))
    from_file = reactord("--config", str(config))
    assert https(tls_port(from_file), cert)[0] == 200


def test_sighup_without_tls_changes_nothing_and_stops_nothing(server):
    server.signal(signal.SIGHUP)
    server.wait_for_log(r"nothing to reload")
    with urllib.request.urlopen(f"http://{HOST}:{server.port}/livez", timeout=5) as response:
        assert response.status == 200


def memory_tls(port: int, version: ssl.TLSVersion | None = None, receive_buffer: int | None = None):
    """A TLS client over memory BIOs, so that what it writes leaves in one send: (socket, ssl object,
    incoming BIO, outgoing BIO), with the handshake done."""
    context = ssl._create_unverified_context()
    if version:
        context.minimum_version = context.maximum_version = version
    sock = socket.socket()
    sock.settimeout(10)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect((HOST, port))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            if outgoing.pending:
                sock.sendall(outgoing.read())
            incoming.write(sock.recv(65536))
    if outgoing.pending:
        sock.sendall(outgoing.read())
    return sock, tls, incoming, outgoing


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
def test_a_request_sent_with_close_notify_is_answered_then_the_server_says_goodbye(reactord, pair, version):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    sock, tls, incoming, outgoing = memory_tls(server.port, version)
    body = b'{"type":"increment","path":"/n"}'
    tls.write(b"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    with pytest.raises(ssl.SSLWantReadError):
        tls.unwrap()  # close_notify, in the same send as the request
    sock.sendall(outgoing.read())
    plaintext, goodbye = b"", False
    with sock:
        while not goodbye:
            data = sock.recv(65536)
            assert data, f"the server closed without close_notify, after {plaintext!r}"
            incoming.write(data)
            try:
                while chunk := tls.read(65536):
                    plaintext += chunk
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLZeroReturnError:
                goodbye = True
    assert plaintext.startswith(b"HTTP/1.1 200 OK\r\n") and plaintext.endswith(b'{"version":1}'), plaintext
    assert https(server.port, cert) == (200, {"n": 1})


def test_pipelined_requests_over_tls_are_answered_in_order_while_answers_back_up(reactord, pair):
    """One send of many TLS records: the server stops reading while answers wait unread, part way
    through the records of one read, and must take up the rest in order once they drain."""
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--max-unsent-bytes", "65536")
    https(server.port, cert, "POST", "/events", [{"type": "set", "path": "/m", "value": list(range(120))},
                                                  {"type": "set", "path": "/big", "value": "x" * 1_000_000}])
    sock, tls, incoming, outgoing = memory_tls(server.port, receive_buffer=8192)
    pad = "p" * 150
    requests = []  # about 26 KB: two TLS records at least
    for i in range(120):
        if i % 10 == 0:
            requests.append(f"GET /state?path=/big HTTP/1.1\r\nHost: localhost\r\nX-Pad: {pad}\r\n\r\n")
        requests.append(f"GET /state?path=/m/{i} HTTP/1.1\r\nHost: localhost\r\nX-Pad: {pad}\r\n\r\n")
    tls.write("".join(requests).encode())
    sock.sendall(outgoing.read())
    time.sleep(1)  # nothing read meanwhile: the answers back up
    buffer, answers = bytearray(), []

    def fill():
        try:
            while chunk := tls.read(1 << 20):
                buffer.extend(chunk)
                return
        except ssl.SSLWantReadError:
            pass
        data = sock.recv(1 << 20)
        assert data, f"the connection ended after {len(answers)} answers"
        incoming.write(data)

    with sock:
        while len(answers) < len(requests):
            while b"\r\n\r\n" not in buffer:
                fill()
            head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            while len(buffer) < len(head) + 4 + length:
                fill()
            body = bytes(buffer[len(head) + 4:len(head) + 4 + length])
            del buffer[:len(head) + 4 + length]
            assert head.startswith(b"HTTP/1.1 200 "), (len(answers), head, body[:200])
            answers.append(body)
    small = [body for body in answers if len(body) < 100]
    assert small == [str(i).encode() for i in range(120)]


def test_a_client_offering_only_other_protocols_gets_the_no_application_protocol_alert(reactord, pair):
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    context = ssl._create_unverified_context()
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        with pytest.raises(ssl.SSLError, match="(?i)no application protocol"):
            context.wrap_socket(sock, server_hostname="localhost")
    # Offering http/1.1 among others still agrees on it.
    context.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection((HOST, server.port), timeout=5) as sock, context.wrap_socket(sock, server_hostname="localhost") as tls:
        assert tls.selected_alpn_protocol() == "http/1.1"


def test_a_client_that_sends_close_notify_then_resets_does_not_bring_the_server_down(reactord, pair, tmp_path):
    """The server's close_notify, sent after the answer, meets a reset connection: the failed write
    closes it, and the close that sent it must not close it again."""
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key, "--data-dir", str(tmp_path / "data"), "--fsync", "always")
    body = b'{"type":"increment","path":"/n"}'
    request = b"POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    for _ in range(20):
        sock, tls, _, outgoing = memory_tls(server.port)
        tls.write(request)
        with pytest.raises(ssl.SSLWantReadError):
            tls.unwrap()
        sock.sendall(outgoing.read())
        time.sleep(0.002)  # the answer waits for the journal's fsync meanwhile
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        time.sleep(0.02)
        assert server.process.poll() is None, f"reactord exited with {server.process.returncode}:\n{server.log()[-2000:]}"
    status, state = https(server.port, cert)
    assert status == 200 and state["n"] <= 20


def test_a_large_answer_to_a_request_sent_with_close_notify_arrives_whole(reactord, pair):
    """The peer's close_notify, read while the answer is still queued (reading stopped), is told
    only once the answer has gone out, as a plain connection's end is."""
    cert, key = pair
    server = reactord("--tls-cert", cert, "--tls-key", key)
    big = "x" * 1_000_000
    for index in range(6):
        assert https(server.port, cert, "POST", "/events", {"type": "set", "path": f"/big/{index}", "value": big})[0] == 200
    sock, tls, incoming, outgoing = memory_tls(server.port, receive_buffer=8192)
    tls.write(b"GET /state?path=/big HTTP/1.1\r\nHost: localhost\r\n\r\n")
    with pytest.raises(ssl.SSLWantReadError):
        tls.unwrap()
    sock.sendall(outgoing.read())
    time.sleep(0.5)  # nothing read meanwhile: the answer backs up
    plaintext, goodbye = bytearray(), False
    with sock:
        while not goodbye:
            data = sock.recv(1 << 20)
            assert data, f"the server closed without close_notify after {len(plaintext)} bytes"
            incoming.write(data)
            try:
                while chunk := tls.read(1 << 20):
                    plaintext += chunk
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLZeroReturnError:
                goodbye = True
    head, _, body = bytes(plaintext).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    expected = json.dumps({str(index): big for index in range(6)}, separators=(",", ":")).encode()
    assert body == expected, f"{len(body)} bytes of {len(expected)}"
