"""A throwaway certificate authority and server certificate for the fake Kubernetes API, made at test time.

The EKS node gate calls ``curl --cacert <the pod's ca.crt>`` and the remediation handler builds an
``ssl.create_default_context(cadata=<the cluster's CA>)``: both verify the server's certificate against a CA, so the
twin makes a CA (``cryptography``), signs a server certificate for ``127.0.0.1`` and ``localhost`` (subject
alternative names: curl and Python match an IP address against an IP SAN only) and hands out the CA's PEM, as EKS
hands out ``certificateAuthority.data``. Keys are EC P-256, valid for one day, written under the twin's directory.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ServerCertificate", "make_server_certificate"]


@dataclass(frozen=True)
class ServerCertificate:
    ca_pem: str
    cert_file: Path
    key_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_server_certificate(directory: Path) -> ServerCertificate:
    """A CA and a server certificate for 127.0.0.1/localhost, the server's files written to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("fmconstructs-twin-kubernetes-ca"))
        .issuer_name(_name("fmconstructs-twin-kubernetes-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital_signature, key_cert_sign, crl_sign
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "apiserver.crt", directory / "apiserver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_file.chmod(0o600)
    return ServerCertificate(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM).decode(), cert_file=cert_file, key_file=key_file
    )
