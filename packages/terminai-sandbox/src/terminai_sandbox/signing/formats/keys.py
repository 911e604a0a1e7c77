"""ECDSA P-256 keys in cosign's formats.

* Public key: PEM ``PUBLIC KEY`` (PKIX).
* Private key: PEM ``ENCRYPTED SIGSTORE PRIVATE KEY`` (what current cosign writes), whose
  body is JSON: scrypt (N=65536, r=8, p=1) derives a 32-byte key from the password, and
  NaCl secretbox (XSalsa20-Poly1305) encrypts the PKCS#8 DER. ``ENCRYPTED COSIGN PRIVATE
  KEY`` (older cosign, skopeo) is read too, with the scrypt parameter sets cosign accepts.
* A plain PKCS#8 ``PRIVATE KEY`` can be imported (cosign's ``import-key-pair``).

Passwords and private key bytes travel as :class:`~terminai_sandbox.secret.Secret`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os

import nacl.exceptions
import nacl.secret
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import SigningError, VerificationError
from terminai_sandbox.secret import Secret

SIGSTORE_PEM = "ENCRYPTED SIGSTORE PRIVATE KEY"
COSIGN_PEM = "ENCRYPTED COSIGN PRIVATE KEY"
_SCRYPT_ALLOWED = {(32768, 8, 1), (65536, 8, 1), (131072, 8, 1)}
_SCRYPT_DEFAULT = (65536, 8, 1)


def generate() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) -> bytes:
    public = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(public: ec.EllipticCurvePublicKey) -> str:
    """``sha256:<hex>`` of the PKIX DER public key (stable name for logs and the ledger)."""
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def _pem(kind: str, body: bytes) -> bytes:
    text = base64.b64encode(body).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return (f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----\n").encode()


def _unpem(data: bytes) -> tuple[str, bytes]:
    text = data.decode("ascii", "replace").strip()
    if not text.startswith("-----BEGIN ") or "-----END " not in text:
        raise SigningError("not a PEM file")
    kind = text.split("\n", 1)[0][len("-----BEGIN ") : -5]
    body = "".join(line for line in text.splitlines()[1:] if not line.startswith("-----"))
    return kind, base64.b64decode(body)


def _scrypt(password: Secret[bytes], salt: bytes, params: tuple[int, int, int]) -> bytes:
    n, r, p = params
    return hashlib.scrypt(password.reveal(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=256 * 1024 * 1024)


def encrypt_private(key: ec.EllipticCurvePrivateKey, password: Secret[bytes], *, kind: str = SIGSTORE_PEM) -> bytes:
    """cosign's encrypted private key PEM for ``key``."""
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    salt, nonce = os.urandom(32), os.urandom(24)
    params = _SCRYPT_DEFAULT if kind == SIGSTORE_PEM else (32768, 8, 1)
    box = nacl.secret.SecretBox(_scrypt(password, salt, params))
    ciphertext = box.encrypt(der, nonce).ciphertext
    body = {
        "kdf": {
            "name": "scrypt",
            "params": {"N": params[0], "r": params[1], "p": params[2]},
            "salt": base64.b64encode(salt).decode(),
        },
        "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode()},
        "ciphertext": base64.b64encode(ciphertext).decode(),
    }
    return _pem(kind, json.dumps(body, separators=(",", ":")).encode())


def load_private(pem: bytes, password: Secret[bytes]) -> ec.EllipticCurvePrivateKey:
    """Read a cosign encrypted key (either PEM type) or a plain PKCS#8 key (import)."""
    kind, body = _unpem(pem)
    if kind == "PRIVATE KEY":
        der = body
    elif kind in (SIGSTORE_PEM, COSIGN_PEM):
        try:
            doc = json.loads(body)
            kdf, cipher = doc["kdf"], doc["cipher"]
            params = (int(kdf["params"]["N"]), int(kdf["params"]["r"]), int(kdf["params"]["p"]))
            salt, nonce = base64.b64decode(kdf["salt"]), base64.b64decode(cipher["nonce"])
            ciphertext = base64.b64decode(doc["ciphertext"])
        except (ValueError, KeyError, TypeError):
            raise SigningError("the encrypted private key is malformed") from None
        if kdf.get("name") != "scrypt" or cipher.get("name") != "nacl/secretbox":
            raise SigningError(f"unsupported key encryption {kdf.get('name')}/{cipher.get('name')}")
        if params not in _SCRYPT_ALLOWED:
            raise SigningError(f"unsupported scrypt parameters {params}")
        try:
            der = nacl.secret.SecretBox(_scrypt(password, salt, params)).decrypt(ciphertext, nonce)
        except nacl.exceptions.CryptoError:
            raise SigningError(
                "wrong password for the private key (decryption failed)",
                hint="set COSIGN_PASSWORD to the key's password",
            ) from None
    else:
        raise SigningError(
            f"unsupported private key PEM type {kind!r}",
            hint="use a cosign key (terminai-sandbox keygen) or a PKCS#8 'PRIVATE KEY' PEM",
        )
    key = serialization.load_der_private_key(der, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise SigningError("only ECDSA P-256 private keys are supported")
    return key


def load_public(pem: bytes) -> ec.EllipticCurvePublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError:
        raise VerificationError("the public key is not a PEM 'PUBLIC KEY'") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise VerificationError("only ECDSA public keys are supported")
    return key
