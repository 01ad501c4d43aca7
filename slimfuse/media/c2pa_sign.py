"""Signed C2PA manifests (the optional `c2pa` extra: c2pa-python), with a `c2pa.created` action that carries the
output's IPTC digital source type.

The writers sign the complete temporary file just before renaming it (AtomicFile's `prepare`), so the output's
name never holds an unsigned or half-signed file. c2pa embeds manifests in JPEG, PNG, WebP, MP4, MOV and AVI;
Matroska, WebM and BMP cannot hold one (those outputs keep their metadata label only).
"""
from __future__ import annotations

import datetime
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from slimfuse.atomic import temporary_name
from slimfuse.errors import C2paSigningError
from slimfuse.media.provenance import C2paSigner, ProvenanceLabel


MIME_TYPES: dict[str, str] = {
    ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp",
    ".mp4": "video/mp4", ".m4v": "video/mp4", ".mov": "video/quicktime", ".avi": "video/x-msvideo",
}
"""The output types c2pa can embed a manifest in, by suffix."""
INSTALL = "pip install 'slimfuse[c2pa]'"


def can_sign(path: Path) -> bool:
    return Path(path).suffix.lower() in MIME_TYPES


def manifest_definition(label: ProvenanceLabel, title: str, mime: str) -> dict[str, Any]:
    agent = {"name": label.tool, "version": label.tool_version}
    action = {"action": "c2pa.created", "digitalSourceType": label.source_type, "softwareAgent": agent}
    return {
        "claim_generator_info": [agent],
        "title": title,
        "format": mime,
        "assertions": [{"label": "c2pa.actions", "data": {"actions": [action]}}],
    }


def signing_step(path: Path, label: ProvenanceLabel | None,
                 notify: Callable[[str], None] | None) -> Callable[[Path], None] | None:
    """What a writer of `path` runs on its finished temporary file (AtomicFile's `prepare`): a C2PA signature when
    the label has a signer and the type can hold one; None otherwise (a type that cannot is reported)."""
    if label is None or label.c2pa is None:
        return None
    if not can_sign(path):
        if notify is not None:
            notify(f"{path}: a {path.suffix} file cannot hold a C2PA manifest; it is written with its "
                   "metadata label only")
        return None
    signer, title = label.c2pa, str(path)
    return lambda temp: sign_in_place(temp, label, signer, title)


def sign_in_place(path: Path, label: ProvenanceLabel, signer: C2paSigner, title: str) -> None:
    """Embed a signed manifest in the file at `path` (typed by `title`'s suffix, the output's final name):
    signed into a temporary file beside it, which then replaces it."""
    mime = MIME_TYPES.get(Path(title).suffix.lower())
    if mime is None:
        raise C2paSigningError(title, f"a {Path(title).suffix} file cannot hold a C2PA manifest")
    signed = temporary_name(Path(path))
    try:
        with open(path, "rb") as source, open(signed, "w+b") as dest:
            _sign(label, signer, title, mime, source, dest)
        os.replace(signed, path)
    finally:
        signed.unlink(missing_ok=True)


def check_signer(signer: C2paSigner, label: ProvenanceLabel) -> None:
    """Sign a one-pixel PNG in memory: raises C2paSigningError before any work when the extra is missing or c2pa
    refuses the key or the certificates."""
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (1, 1)).save(png, format="PNG")
    png.seek(0)
    _sign(label, signer, str(signer.certificates), "image/png", png, io.BytesIO())


def _sign(label: ProvenanceLabel, signer: C2paSigner, title: str, mime: str, source: BinaryIO,
          dest: BinaryIO) -> None:
    c2pa = _import_c2pa(title)
    info = c2pa.C2paSignerInfo(signer.algorithm.encode(), _read(signer.certificates, title), _read(signer.key, title),
                               signer.timestamp_url)
    manifest = json.dumps(manifest_definition(label, Path(title).name, mime))
    try:
        with c2pa.Signer.from_info(info) as native, c2pa.Builder(manifest) as builder:
            builder.sign(native, mime, source, dest)
    except c2pa.C2paError as exc:
        raise C2paSigningError(title, f"C2PA signing failed ({_first_line(exc)})") from exc


def make_test_credentials(folder: Path, days: int = 30) -> C2paSigner:
    """A small certificate authority and an EC P-256 signing certificate issued by it (`ca.pem`, `chain.pem`,
    `key.pem` in `folder`), for tests and trying the feature out: a reader reports it as untrusted unless
    `ca.pem` is among its trust anchors."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, "slimfuse test signer")])

    def usage(sign: bool) -> x509.KeyUsage:
        return x509.KeyUsage(digital_signature=sign, content_commitment=False, key_encipherment=False,
                             data_encipherment=False, key_agreement=False, key_cert_sign=not sign, crl_sign=not sign,
                             encipher_only=False, decipher_only=False)

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("slimfuse test CA")).issuer_name(name("slimfuse test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(usage(sign=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    # c2pa wants a leaf that is not a CA, may sign, and is for e-mail protection or document signing.
    leaf = (x509.CertificateBuilder().subject_name(name("slimfuse test signing")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage(sign=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "chain.pem").write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    (folder / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return C2paSigner(key=folder / "key.pem", certificates=folder / "chain.pem")


def _import_c2pa(title: str) -> Any:
    try:
        import c2pa
    except ImportError as exc:
        raise C2paSigningError(title, f"the c2pa extra is not installed (cannot import c2pa): {INSTALL}") from exc
    return c2pa


def _read(path: Path, title: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise C2paSigningError(path, f"cannot read the C2PA credentials for {title} ({exc.strerror or exc})") from exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
