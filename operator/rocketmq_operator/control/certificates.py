"""Certificates for spec.tls: the operator's own certificate authority and the certificates it issues to each
process, as PEM text. Both platforms call it: the local platform writes the PEM to files, the Kubernetes one
would write it to Secrets.

Contract:

* `new_authority(name, lifetime_s, now)` makes a self-signed CA (ECDSA P-256, path length 1: room for the
  bridge of its own successor); `held_or_new_authority(cert, key, name, now)` keeps a held one while it is valid.
* `cross_sign(successor, predecessor, now)`: the successor authority's certificate (its name and key) signed by
  the predecessor, never outliving it. A leaf of the successor served with this bridge after it
  (`chain_pem`) verifies for a client that trusts only the predecessor (leaf -> bridge -> predecessor), one that
  trusts only the successor (the bridge has the successor's name and key: RFC 4158 path building, Java's PKIX
  and OpenSSL both stop at it), and one that trusts both. That is how the authority is replaced with no
  moment where two peers distrust each other, though RocketMQ's remoting clients read their trust once, at
  start (`TlsHelper.buildSslContext(true)` in the `NettyRemotingClient` constructor).
* `pem_certificates(text)` splits a bundle or a chain into its certificates; `trust_bundle(*authorities)` is the
  text of a trust file holding each.
* `Authority`: an authority as a platform holds it (the signer, the trust file's text, the bridge during an
  overlap); `Authority.held(trust, key, bridge)` reads it back, `Authority.after(action, name, now)` is the one
  after a rotation's two steps (`core.tls.plan_authority`); `Authority.chain(leaf)` what a process serves.
* `issue(authority, common_name, dns_names, ip_addresses, lifetime_s, now)` makes a server-and-client
  certificate (RocketMQ processes are both) signed by `authority`, with every name and address as a SAN, so
  clients that check the host they dial accept it. The key is unencrypted PKCS#8 PEM, the form Netty's
  `SslContextBuilder.forServer(certStream, keyStream)` reads.
* `CertificateInfo.of(pem)` reads what renewal needs: expiry, fingerprint, issuer, SANs. Raises
  `CertificateError` for text that is not a PEM certificate.

`cryptography` (pyca) does the X.509 work; nothing here is hand-written crypto.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

AUTHORITY_LIFETIME_S = 10 * 365 * 86400
"""Ten years: the operator's authorities (one per local state directory, one per Kubernetes namespace)."""
BACKDATE_S = 300
"""Certificates start five minutes in the past: a peer whose clock is a little behind still accepts them."""


class CertificateError(ValueError):
    """PEM text that is not a certificate (or a key that does not load)."""


@dataclass(frozen=True, slots=True)
class IssuedPair:
    cert_pem: str
    key_pem: str


@dataclass(frozen=True, slots=True)
class CertificateInfo:
    not_after: float
    """Expiry, epoch seconds."""
    not_before: float
    fingerprint: str
    """SHA-256 of the DER, hex."""
    subject: str
    issuer: str
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]

    @classmethod
    def of(cls, cert_pem: str) -> CertificateInfo:
        cert = _load_cert(cert_pem)
        try:
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns = tuple(san.get_values_for_type(x509.DNSName))
            ips = tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
        except x509.ExtensionNotFound:
            dns, ips = (), ()
        return cls(
            not_after=cert.not_valid_after_utc.timestamp(),
            not_before=cert.not_valid_before_utc.timestamp(),
            fingerprint=cert.fingerprint(hashes.SHA256()).hex(),
            subject=cert.subject.rfc4514_string(),
            issuer=cert.issuer.rfc4514_string(),
            dns_names=dns,
            ip_addresses=ips,
        )


def _load_cert(cert_pem: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(cert_pem.encode())
    except ValueError as exc:
        raise CertificateError(f"not a PEM certificate: {exc}") from None


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _validity(now: float, lifetime_s: int) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.fromtimestamp(now - BACKDATE_S, dt.UTC)
    return start, dt.datetime.fromtimestamp(now + lifetime_s, dt.UTC)


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def _ec_key(key_pem: str, whose: str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"{whose} key does not load: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError(f"{whose} key is not an EC key")
    return key


def _authority_name(name: str, now: float) -> x509.Name:
    # A successor must not share its predecessor's name: a verifier that finds a trusted certificate by the
    # issuer's name would try the wrong key. The second of its making tells them apart.
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, name),
            x509.NameAttribute(NameOID.SERIAL_NUMBER, str(int(now))),
        ]
    )


def new_authority(name: str, lifetime_s: int, now: float) -> IssuedPair:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _authority_name(name, now)
    start, end = _validity(now, lifetime_s)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        # Path length 1: the bridge to this authority's successor sits between it and the successor's leaves.
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return IssuedPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key))


def cross_sign(successor: IssuedPair, predecessor: IssuedPair, now: float) -> str:
    """The successor's certificate re-issued by the predecessor (see the contract): PEM."""
    new_ca, old_ca = _load_cert(successor.cert_pem), _load_cert(predecessor.cert_pem)
    old_key = _ec_key(predecessor.key_pem, "the predecessor authority's")
    start, _ = _validity(now, 0)
    end = min(new_ca.not_valid_after_utc, old_ca.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(new_ca.subject)
        .issuer_name(old_ca.subject)
        .public_key(new_ca.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(new_ca.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(old_key.public_key()), critical=False)
        .sign(old_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


_PEM_END = "-----END CERTIFICATE-----"


def pem_certificates(text: str) -> list[str]:
    """Each certificate of a PEM bundle or chain, in order, as its own PEM text."""
    out: list[str] = []
    for part in text.split(_PEM_END)[:-1]:
        start = part.find("-----BEGIN CERTIFICATE-----")
        if start >= 0:
            out.append(part[start:] + _PEM_END + "\n")
    return out


def trust_bundle(*authorities: str) -> str:
    """A trust file's text: every certificate of each authority's PEM, the first the one that signs now."""
    return "".join(c for pem in authorities for c in pem_certificates(pem))


@dataclass(frozen=True, slots=True)
class Authority:
    """An authority as both platforms hold it."""

    signer: IssuedPair
    """Signs every certificate from now on."""
    trust: str
    """The trust file's text: the signer, then its predecessor while a rotation's overlap is open."""
    bridge: str | None
    """The signer certified by its predecessor, served after every leaf during the overlap."""

    @classmethod
    def held(cls, trust: str, key_pem: str, bridge: str | None) -> Authority:
        """What a platform stored (the first certificate of the trust signs); the bridge counts only while the
        trust holds a predecessor beside it."""
        certs = pem_certificates(trust)
        signer = IssuedPair(certs[0], key_pem)
        if not bridge or len(certs) < 2:
            return cls(signer, certs[0], None)
        return cls(signer, trust_bundle(*certs[:2]), bridge)

    @property
    def predecessor(self) -> str | None:
        certs = pem_certificates(self.trust)
        return certs[1] if self.bridge is not None and len(certs) > 1 else None

    def rotated(self, name: str, now: float) -> Authority:
        """A successor signs, both are trusted (the successor first), and leaves are served with the bridge."""
        successor = new_authority(name, AUTHORITY_LIFETIME_S, now)
        return Authority(
            successor, trust_bundle(successor.cert_pem, self.signer.cert_pem), cross_sign(successor, self.signer, now)
        )

    def retired(self) -> Authority:
        """The predecessor and the bridge gone: the signer alone."""
        return Authority(self.signer, self.signer.cert_pem, None)

    def chain(self, leaf_pem: str) -> str:
        return leaf_pem + (self.bridge or "")

    def serves(self, chain_pem: str) -> bool:
        """Whether a process's chain is this authority's: its leaf from the signer, the bridge after it exactly
        while there is one."""
        return signed_by(chain_pem, self.signer.cert_pem) and pem_certificates(chain_pem)[1:] == pem_certificates(
            self.bridge or ""
        )


def held_or_new_authority(cert_pem: str | None, key_pem: str | None, name: str, now: float) -> tuple[IssuedPair, bool]:
    """The authority a platform holds (its PEM certificate and key) while it is readable and unexpired, else a new
    one; True when new (the platform stores it). Both platforms keep their authority this way."""
    if cert_pem and key_pem:
        try:
            if CertificateInfo.of(cert_pem).not_after > now:
                return IssuedPair(cert_pem, key_pem), False
        except CertificateError:
            pass
    return new_authority(name, AUTHORITY_LIFETIME_S, now), True


def issue(
    authority: IssuedPair,
    common_name: str,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    lifetime_s: int,
    now: float,
) -> IssuedPair:
    ca_cert = _load_cert(authority.cert_pem)
    ca_key = _ec_key(authority.key_pem, "the authority's")
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    start, end = _validity(now, lifetime_s)
    end = min(end, ca_cert.not_valid_after_utc)  # never outlives its issuer
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return IssuedPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key))


def signed_by(cert_pem: str, authority_pem: str) -> bool:
    """Whether ``cert_pem`` was signed by the authority's key (a certificate of an older CA is not)."""
    cert, ca = _load_cert(cert_pem), _load_cert(authority_pem)
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True
