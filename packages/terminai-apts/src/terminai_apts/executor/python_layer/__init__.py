"""The Python layer (layers 1-5): size caps and AST validation, the compile policy over
RestrictedPython, the restricted globals and builtins, the runtime guards, the import
proxies and the values handed to programs. Defence in depth: the OS layer holds with
it gone, and it imports nothing of the OS layer."""
