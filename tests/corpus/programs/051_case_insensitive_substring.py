for q in ["gpu", "GPU", "Gpu", "postgres 16", "a100", "k8s"]:
    print(f"{q!r:>14}: {thermal.count(q)}")
