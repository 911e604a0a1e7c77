"""Admission that refuses unsigned images, generated from the policy ``verify`` trusts.

One :class:`~terminai_sandbox.signing.verify.trust.VerificationPolicy` becomes:

* a sigstore policy-controller ``ClusterImagePolicy`` (``policy.sigstore.dev/v1beta1``):
  one authority per trusted key (inline PEM) and per keyless identity (subject and
  issuer, or their regular expressions). Authorities are alternatives, as in ``verify``:
  one valid signature passes. It covers the image's repository at any tag or digest; the
  controller only admits into namespaces labelled ``policy.sigstore.dev/include=true``,
  and there an image that matches no policy is denied (its default ``no-match-policy``).
* a Kyverno ``ClusterPolicy`` (``kyverno.io/v1``) with ``verifyImages``: in the sandbox
  namespace every Pod image (and, through Kyverno's rule generation, every Job's) must
  carry a signature from one attestor entry: ``count: 1`` makes the entries alternatives.

Key-signed images carry no transparency-log entry (``sign --key`` does not upload one),
so key entries skip the log, as ``verify`` does; keyless entries use the public-good
Fulcio and Rekor, which ``verify`` checks the certificate chain and log entry against by
default. ``mode: warn`` becomes the controllers' warn/audit modes.

Mirrors: when the trust policy names mirrors for the verified repository (or the verified
repository is such a mirror), the signed repository and every mirror pattern are admitted
too: policy-controller ``images`` globs (its ``*`` stops at ``/``, ``**`` does not, as in
the policy file), and a Kyverno rule that refuses Pod images from any other repository
(a regular expression built from the same patterns, so Kyverno's ``*``, which crosses
``/``, never widens them). Without mirrors only the verified repository is admitted.
"""

from __future__ import annotations

from typing import Any

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.kube.hardening import SANDBOX_LABEL
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy, pattern_regex

FULCIO_URL = "https://fulcio.sigstore.dev"
REKOR_URL = "https://rekor.sigstore.dev"


def _nothing_trusted(policy: VerificationPolicy) -> bool:
    return not policy.keys and not policy.identities


def whole_match(pattern: str | None) -> str | None:
    """``pattern`` anchored at both ends, as ``verify`` matches it (``re.fullmatch``).

    policy-controller and Kyverno match identities with cosign's Go code, whose
    ``regexp.MatchString`` finds the pattern anywhere in the subject: unanchored,
    ``https://github.com/org/.*`` would also admit ``https://evil.example/https://github.com/org/x``,
    which ``verify`` refuses.
    """
    if not pattern or (pattern.startswith("^(?:") and pattern.endswith(")$")):
        return pattern
    return f"^(?:{pattern})$"


def _sigstore_identity(identity: KeylessIdentity) -> dict[str, str]:
    fields = {
        "subject": identity.identity,
        "subjectRegExp": whole_match(identity.identity_regexp),
        "issuer": identity.issuer,
        "issuerRegExp": whole_match(identity.issuer_regexp),
    }
    return {key: value for key, value in fields.items() if value}


def admitted_repositories(policy: VerificationPolicy, ref: ImageRef) -> list[str]:
    """``ref``'s repository, then the signed repository and mirror patterns of the mirror entries covering it."""
    found = [ref.name]
    for mirror in policy.mirrors:
        if mirror.covers(ref.name):
            found += [name for name in (mirror.identity, *mirror.repositories) if name not in found]
    return found


def repository_globs(ref: ImageRef, policy: VerificationPolicy | None = None) -> list[str]:
    """policy-controller globs for the admitted repositories at any digest or tag (``*`` stops at ``/``)."""
    names = admitted_repositories(policy, ref) if policy is not None else [ref.name]
    return [glob for name in names for glob in (f"{name}@*", f"{name}:*")]


def image_regex(policy: VerificationPolicy, ref: ImageRef) -> str:
    """An image reference from an admitted repository, pinned by digest (a tag may precede it)."""
    names = "|".join(pattern_regex(name) for name in admitted_repositories(policy, ref))
    return f"^(?:{names})(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)?@sha256:[0-9a-f]+$"


def cluster_image_policy(policy: VerificationPolicy, ref: ImageRef, name: str) -> dict[str, Any]:
    if _nothing_trusted(policy):
        raise ValueError("a policy that trusts nothing cannot be turned into admission rules")
    authorities: list[dict[str, Any]] = [
        {"key": {"data": key.pem.decode(), "hashAlgorithm": "sha256"}, "name": f"key-{index}"}
        for index, key in enumerate(policy.keys)
    ]
    authorities += [
        {
            "ctlog": {"url": REKOR_URL},
            "keyless": {"identities": [_sigstore_identity(identity)], "url": FULCIO_URL},
            "name": f"keyless-{index}",
        }
        for index, identity in enumerate(policy.identities)
    ]
    return {
        "apiVersion": "policy.sigstore.dev/v1beta1",
        "kind": "ClusterImagePolicy",
        "metadata": {"labels": {SANDBOX_LABEL: "1"}, "name": f"{name}-signed"},
        "spec": {
            "authorities": authorities,
            "images": [{"glob": glob} for glob in repository_globs(ref, policy)],
            "mode": policy.mode,
        },
    }


def kyverno_cluster_policy(policy: VerificationPolicy, name: str, namespace: str, ref: ImageRef) -> dict[str, Any]:
    if _nothing_trusted(policy):
        raise ValueError("a policy that trusts nothing cannot be turned into admission rules")
    entries: list[dict[str, Any]] = [
        {"keys": {"ctlog": {"ignoreSCT": True}, "publicKeys": key.pem.decode(), "rekor": {"ignoreTlog": True}}}
        for key in policy.keys
    ]
    entries += [
        {"keyless": {**_sigstore_identity(identity), "rekor": {"url": REKOR_URL}}} for identity in policy.identities
    ]
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {"labels": {SANDBOX_LABEL: "1"}, "name": f"{name}-signed"},
        "spec": {
            "background": False,
            "rules": [
                {
                    "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": [namespace]}}]},
                    "name": "signed-by-the-trust-policy",
                    "verifyImages": [
                        {
                            "attestors": [{"count": 1, "entries": entries}],
                            "failureAction": "Enforce" if policy.mode == "enforce" else "Audit",
                            "imageReferences": ["*"],
                            "mutateDigest": False,  # images arrive pinned; nothing to rewrite
                            "required": True,
                            "verifyDigest": True,
                        }
                    ],
                },
                _kyverno_repositories(policy, ref, namespace),
            ],
            "webhookTimeoutSeconds": 30,
        },
    }


def _kyverno_repositories(policy: VerificationPolicy, ref: ImageRef, namespace: str) -> dict[str, Any]:
    """Every container image of a sandbox Pod comes from an admitted repository (policy-controller's
    no-match denial, for Kyverno, whose signature check alone ignores where an image lives)."""
    pattern = image_regex(policy, ref)
    return {
        "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": [namespace]}}]},
        "name": "from-the-verified-repository-or-a-named-mirror",
        "validate": {
            "failureAction": "Enforce" if policy.mode == "enforce" else "Audit",
            "foreach": [
                {
                    "deny": {
                        "conditions": {
                            "any": [
                                {
                                    "key": "{{ regex_match('" + pattern + "', '{{element.image}}') }}",
                                    "operator": "Equals",
                                    "value": False,
                                }
                            ]
                        }
                    },
                    "list": "request.object.spec.[containers, initContainers, ephemeralContainers][]",
                }
            ],
            "message": f"sandbox images must come from {', '.join(admitted_repositories(policy, ref))}",
        },
    }
