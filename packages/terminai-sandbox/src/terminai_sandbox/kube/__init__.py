"""``terminai-sandbox kube``: the verified, hardened session as Kubernetes objects.

The steps, in order:

1. :mod:`.source` resolves the image reference to a digest once and verifies it with the
   trust policy ``verify`` uses (nothing is emitted for an image that does not verify);
2. :mod:`.workloads` builds the agent-sandbox ``SandboxTemplate``, a plain ``Pod`` and a
   ``Job`` from one hardened pod spec (:mod:`.hardening`, whose values come from the
   launcher), with a default-deny ``NetworkPolicy`` and the gVisor ``RuntimeClass``;
3. :mod:`.admission` turns the same trust policy into admission rules that refuse
   unsigned images: a sigstore policy-controller ``ClusterImagePolicy`` and a Kyverno
   ``ClusterPolicy``;
4. :mod:`.render` writes them deterministically as YAML or JSON.
"""
