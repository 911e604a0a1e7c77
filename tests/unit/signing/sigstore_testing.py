"""A self-contained Sigstore instance for tests: Fulcio-like CA, CT log, Rekor-like log.

Real Sigstore (Fulcio, Rekor) is not reachable from tests, so signing is exercised with a
signer that behaves like sigstore-python's ``Signer`` but whose certificate authority,
certificate-transparency log and transparency log are keys generated here:

* a root CA and an intermediate CA (P-384, as Fulcio's), issuing short-lived leaf
  certificates with Fulcio's extensions (SAN identity, OIDC issuer OIDs, code signing) and
  an embedded precertificate SCT signed by the test CT log;
* a Rekor-like log that returns a ``hashedrekord``/``dsse`` entry with an inclusion promise
  (SET) and a one-leaf inclusion proof with a signed checkpoint;
* ``trusted_root_json()`` describing all of it in the Sigstore trusted-root format.

The bundles are complete enough that sigstore-python's own ``Verifier`` accepts them
against the test trusted root (a unit test checks that), so the test instance is not
shaped to fit the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from sigstore.dsse import Statement
from sigstore.models import Bundle
from terminai_sandbox.signing.formats import dsse
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust, parse_trust

SCT_OID = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
IDENTITY = "release@example.test"
ISSUER = "https://issuer.example.test"


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _spki(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _pem_b64(cert: x509.Certificate) -> str:
    return _b64(cert.public_bytes(serialization.Encoding.PEM))


@dataclass
class TestSigstore:
    """One test Sigstore instance; ``now`` is the signing time every certificate centres on."""

    __test__ = False  # not a pytest test class

    now: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))
    root_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP384R1()))
    ca_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP384R1()))
    rekor_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    ct_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    name: str = "test sigstore"

    def __post_init__(self) -> None:
        start, end = self.now - timedelta(days=1), self.now + timedelta(days=365)
        root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{self.name} root")])
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{self.name} intermediate")])
        self.root = (
            x509.CertificateBuilder()
            .subject_name(root_name)
            .issuer_name(root_name)
            .public_key(self.root_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(_ca_usage(), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.root_key.public_key()), critical=False)
            .sign(self.root_key, hashes.SHA384())
        )
        self.intermediate = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(root_name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_ca_usage(), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.root_key.public_key()), critical=False
            )
            .sign(self.root_key, hashes.SHA384())
        )

    # -- trusted root ---------------------------------------------------------------

    @property
    def rekor_log_id(self) -> bytes:
        return hashlib.sha256(_spki(self.rekor_key.public_key())).digest()

    @property
    def ct_log_id(self) -> bytes:
        return hashlib.sha256(_spki(self.ct_key.public_key())).digest()

    def trusted_root_json(self) -> str:
        valid = {"start": (self.now - timedelta(days=1)).isoformat().replace("+00:00", "Z")}

        def log(key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, Any]:
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": _b64(_spki(key.public_key())),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": valid,
                },
                "logId": {"keyId": _b64(hashlib.sha256(_spki(key.public_key())).digest())},
            }

        der = serialization.Encoding.DER
        return json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
                "tlogs": [log(self.rekor_key, "https://rekor.example.test")],
                "certificateAuthorities": [
                    {
                        "subject": {"organization": "example.test", "commonName": self.name},
                        "uri": "https://fulcio.example.test",
                        "certChain": {
                            "certificates": [
                                {"rawBytes": _b64(self.intermediate.public_bytes(der))},
                                {"rawBytes": _b64(self.root.public_bytes(der))},
                            ]
                        },
                        "validFor": valid,
                    }
                ],
                "ctlogs": [log(self.ct_key, "https://ctfe.example.test")],
                "timestampAuthorities": [],
            },
            indent=1,
        )

    def write_trusted_root(self, path: Path) -> Path:
        path.write_text(self.trusted_root_json())
        return path

    def trust(self) -> SigstoreTrust:
        return parse_trust(self.trusted_root_json(), f"the {self.name} trusted root")

    # -- Fulcio ---------------------------------------------------------------------

    def issue(
        self,
        key: ec.EllipticCurvePrivateKey,
        *,
        identity: str = IDENTITY,
        issuer: str = ISSUER,
        sct: bool = True,
        code_signing: bool = True,
    ) -> x509.Certificate:
        """A Fulcio-style leaf for ``key``, valid ten minutes from one minute before ``now``."""
        san: x509.GeneralName = (
            x509.RFC822Name(identity)
            if "@" in identity and "/" not in identity
            else x509.UniformResourceIdentifier(identity)
        )
        usage = [ExtendedKeyUsageOID.CODE_SIGNING if code_signing else ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.intermediate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.now - timedelta(minutes=1))
            .not_valid_after(self.now + timedelta(minutes=9))
            .add_extension(_leaf_usage(), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()), critical=False)
            .add_extension(x509.SubjectAlternativeName([san]), critical=True)
            .add_extension(x509.UnrecognizedExtension(ISSUER_V1, issuer.encode()), critical=False)
            .add_extension(
                x509.UnrecognizedExtension(ISSUER_V2, b"\x0c" + _der_length(len(issuer)) + issuer.encode()),
                critical=False,
            )
        )
        if not sct:
            return builder.sign(self.ca_key, hashes.SHA384())
        precert = builder.sign(self.ca_key, hashes.SHA384())
        return builder.add_extension(
            x509.UnrecognizedExtension(SCT_OID, self._sct_list(precert.tbs_certificate_bytes)), critical=False
        ).sign(self.ca_key, hashes.SHA384())

    def _sct_list(self, tbs: bytes) -> bytes:
        # RFC 6962: a v1 precertificate SCT over (issuer key hash, TBS without the SCT list).
        millis = int(self.now.timestamp() * 1000)
        issuer_key_hash = hashlib.sha256(_spki(self.ca_key.public_key())).digest()
        signed = (
            struct.pack("!BBQH", 0, 0, millis, 1)
            + issuer_key_hash
            + len(tbs).to_bytes(3, "big")
            + tbs
            + struct.pack("!H", 0)
        )
        signature = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        sct = (
            bytes([0])
            + self.ct_log_id
            + struct.pack("!QH", millis, 0)
            + bytes([4, 3])
            + struct.pack("!H", len(signature))
            + signature
        )
        listing = struct.pack("!H", len(sct)) + sct
        inner = struct.pack("!H", len(listing)) + listing
        return b"\x04" + _der_length(len(inner)) + inner

    # -- Rekor ----------------------------------------------------------------------

    def log_entry(self, body: bytes, kind: str, *, log_index: int = 7) -> dict[str, Any]:
        """A Rekor v1 entry for ``body``: SET, and a one-leaf inclusion proof with checkpoint."""
        integrated = int(self.now.timestamp())
        set_payload = json.dumps(
            {"body": _b64(body), "integratedTime": integrated, "logID": self.rekor_log_id.hex(), "logIndex": log_index},
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
        root_hash = hashlib.sha256(b"\x00" + body).digest()
        note = f"rekor.example.test - 1\n1\n{_b64(root_hash)}\n"
        note_signature = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = note + "\n\u2014 rekor.example.test " + _b64(self.rekor_log_id[:4] + note_signature) + "\n"
        return {
            "logIndex": str(log_index),
            "logId": {"keyId": _b64(self.rekor_log_id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": str(integrated),
            "inclusionPromise": {
                "signedEntryTimestamp": _b64(self.rekor_key.sign(set_payload, ec.ECDSA(hashes.SHA256())))
            },
            "inclusionProof": {
                "logIndex": "0",
                "rootHash": _b64(root_hash),
                "treeSize": "1",
                "hashes": [],
                "checkpoint": {"envelope": checkpoint},
            },
            "canonicalizedBody": _b64(body),
        }

    def signer(self, *, identity: str = IDENTITY, issuer: str = ISSUER, ca: TestSigstore | None = None) -> FakeSigner:
        """A signer whose certificate comes from ``ca`` (default: this instance) and whose log is this one."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (ca or self).issue(key, identity=identity, issuer=issuer)
        return FakeSigner(log=self, key=key, certificate=cert)


@dataclass
class FakeSigner:
    """sigstore-python's ``Signer`` surface (``sign_artifact``, ``sign_dsse``), offline."""

    log: TestSigstore
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    signed: list[bytes] = field(default_factory=list)

    def _bundle(self, content: dict[str, Any], entry: dict[str, Any]) -> Bundle:
        der = self.certificate.public_bytes(serialization.Encoding.DER)
        return Bundle.from_json(
            json.dumps(
                {
                    "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                    "verificationMaterial": {"certificate": {"rawBytes": _b64(der)}, "tlogEntries": [entry]},
                    **content,
                }
            )
        )

    def sign_artifact(self, input_: bytes) -> Bundle:
        self.signed.append(input_)
        signature = self.key.sign(input_, ec.ECDSA(hashes.SHA256()))
        digest = hashlib.sha256(input_)
        body = {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": digest.hexdigest()}},
                "signature": {"content": _b64(signature), "publicKey": {"content": _pem_b64(self.certificate)}},
            },
        }
        entry = self.log.log_entry(json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), "hashedrekord")
        content = {
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": _b64(digest.digest())},
                "signature": _b64(signature),
            }
        }
        return self._bundle(content, entry)

    def sign_dsse(self, input_: Statement) -> Bundle:
        statement = input_._contents  # the canonical statement bytes sigstore-python signs
        envelope = json.loads(dsse.envelope(statement, self.key))
        signature = base64.b64decode(envelope["signatures"][0]["sig"])
        body = {
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest(),
                },
                "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
                "signatures": [{"signature": _b64(signature), "verifier": _pem_b64(self.certificate)}],
            },
        }
        entry = self.log.log_entry(json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), "dsse")
        return self._bundle({"dsseEnvelope": envelope}, entry)


def _ca_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=False,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )


def _leaf_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
