import hashlib

files = {"a.txt": "hello\n", "b.txt": "hello\n", "c.txt": "world\n"}
digests = {}
for name, body in files.items():
    digests.setdefault(hashlib.md5(body.encode()).hexdigest(), []).append(name)
for d, names in digests.items():
    print(d[:8], names)
print(hashlib.sha1(b"abc").hexdigest())
