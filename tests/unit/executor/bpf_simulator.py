"""A classic-BPF interpreter for seccomp programs: what the kernel's filter returns for
one ``struct seccomp_data``, without loading anything.

It accepts exactly the instructions the kernel's ``seccomp_check_filter`` lets through
(loads of the data's 32-bit words, the scratch memory, ALU, jumps, returns) and refuses
any other opcode rather than guess. PyPI holds compilers and C tools for BPF but no
maintained interpreter of it; this one is proven against the kernel itself
(``test_seccomp_aarch64.py`` runs the native program both ways and compares).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

# struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; } in the host's byte order,
# as libseccomp's seccomp_export_bpf writes it (aarch64 and x86_64 are both little-endian).
_INSN = struct.Struct("<HBBI")
_DATA = struct.Struct("<IIQ6Q")  # struct seccomp_data (nr is an int: the same 32 bits)
_MASK32 = 0xFFFFFFFF
_MEMWORDS = 16  # BPF_MEMWORDS

# linux/filter.h
_CLASS = 0x07
_LD, _LDX, _ST, _STX, _ALU, _JMP, _RET, _MISC = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
_MODE = 0xE0
_IMM, _ABS, _MEM, _LEN = 0x00, 0x20, 0x60, 0x80
_SIZE = 0x18
_W = 0x00
_SRC = 0x08  # BPF_X
_OP = 0xF0
_RVAL = 0x18
_RET_A = 0x10
_MISC_TXA = 0x80

_ALU_OPS: dict[int, Callable[[int, int], int]] = {
    0x00: lambda a, b: a + b,
    0x10: lambda a, b: a - b,
    0x20: lambda a, b: a * b,
    0x30: lambda a, b: a // b,
    0x40: lambda a, b: a | b,
    0x50: lambda a, b: a & b,
    0x60: lambda a, b: a << b if b < 32 else 0,
    0x70: lambda a, b: a >> b if b < 32 else 0,
    0x90: lambda a, b: a % b,
    0xA0: lambda a, b: a ^ b,
}
_NEG = 0x80
_JUMPS: dict[int, Callable[[int, int], bool]] = {
    0x10: lambda a, b: a == b,
    0x20: lambda a, b: a > b,
    0x30: lambda a, b: a >= b,
    0x40: lambda a, b: bool(a & b),
}
_JA = 0x00


class BadProgram(ValueError):
    """The program holds an instruction seccomp would not accept, or runs off its end."""


@dataclass(frozen=True, slots=True)
class SeccompData:
    nr: int
    arch: int
    instruction_pointer: int = 0
    args: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)

    def pack(self) -> bytes:
        return _DATA.pack(
            self.nr & _MASK32, self.arch, self.instruction_pointer, *(a & 0xFFFFFFFFFFFFFFFF for a in self.args)
        )


@dataclass(frozen=True, slots=True)
class Program:
    insns: tuple[tuple[int, int, int, int], ...]

    @classmethod
    def parse(cls, program: bytes) -> Program:
        if not program or len(program) % _INSN.size or len(program) // _INSN.size > 4096:
            raise BadProgram(f"{len(program)} bytes is not a seccomp program")
        return cls(tuple(_INSN.iter_unpack(program)))

    def run(self, data: SeccompData) -> int:
        """The 32-bit action the program returns for ``data``."""
        words = data.pack()
        acc = index = 0
        mem = [0] * _MEMWORDS
        pc = 0
        while True:
            if pc >= len(self.insns):
                raise BadProgram("the program runs off its end")
            code, jt, jf, k = self.insns[pc]
            pc += 1
            cls = code & _CLASS
            if cls == _RET:
                rval = code & _RVAL
                if rval == _RET_A:
                    return acc
                if rval == 0:  # BPF_K
                    return k
                raise BadProgram(f"return opcode {code:#x}")
            if cls in (_LD, _LDX):
                value = self._load(code, k, words, mem)
                if cls == _LD:
                    acc = value
                else:
                    index = value
            elif cls in (_ST, _STX):
                if code & ~_CLASS or k >= _MEMWORDS:
                    raise BadProgram(f"store opcode {code:#x} to {k}")
                mem[k] = acc if cls == _ST else index
            elif cls == _ALU:
                op = code & _OP
                if op == _NEG:
                    acc = -acc & _MASK32
                    continue
                operand = index if code & _SRC else k
                if op not in _ALU_OPS:
                    raise BadProgram(f"ALU opcode {code:#x}")
                if op in (0x30, 0x90) and operand == 0:
                    return 0  # the kernel's classic BPF returns 0 (kill) on division by zero
                acc = _ALU_OPS[op](acc, operand) & _MASK32
            elif cls == _JMP:
                op = code & _OP
                if op == _JA:
                    pc += k
                    continue
                if op not in _JUMPS:
                    raise BadProgram(f"jump opcode {code:#x}")
                operand = index if code & _SRC else k
                pc += jt if _JUMPS[op](acc, operand) else jf
            elif cls == _MISC:
                if code & 0xF8 == _MISC_TXA:
                    acc = index
                else:
                    index = acc  # TAX
            else:  # pragma: no cover - the eight classes are exhaustive
                raise BadProgram(f"opcode {code:#x}")

    @staticmethod
    def _load(code: int, k: int, words: bytes, mem: list[int]) -> int:
        mode = code & _MODE
        if mode == _IMM:
            return k
        if mode == _MEM:
            if k >= _MEMWORDS:
                raise BadProgram(f"scratch word {k}")
            return mem[k]
        if mode == _LEN:
            return len(words)
        if mode == _ABS and code & _SIZE == _W and code & _CLASS == _LD:
            # seccomp allows aligned 32-bit loads inside seccomp_data only
            if k % 4 or k + 4 > len(words):
                raise BadProgram(f"load at offset {k}")
            value: int = struct.unpack_from("<I", words, k)[0]
            return value
        raise BadProgram(f"load opcode {code:#x}")


def action(program: bytes, data: SeccompData) -> int:
    return Program.parse(program).run(data)
