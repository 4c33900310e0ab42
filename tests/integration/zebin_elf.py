# SPDX-License-Identifier: MIT
"""A debug zebin as NEO writes one (docs/xe.md): an ELF with an addressed
.text and two STT_FUNC kernels, kern_a at TEXT_VA and kern_b 16 bytes on.
Used by test_xe_zebin.py (RPC xe.zebin) and test_gpu_launch.py (NEO's
compile_kernel USDT)."""

import struct

TEXT_VA = 0xFFFF800000010000
ISA = bytes([0x40, 0, 0x10, 0, 0xA0, 0x0A, 0x05, 0x0A, 0x04, 0x0B, 0x10, 0x0A,
             0x04, 0x0C, 0x10, 0, 0x60] + [0] * 15)


def zebin():
    shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0kern_a\0kern_b\0"
    sym = lambda name, value: struct.pack("<IBBHQQ", name, 0x12, 0, 1, value, 16)
    symtab = bytes(24) + sym(1, TEXT_VA) + sym(8, TEXT_VA + 16)
    body, offs = b"", []
    for blob in (ISA, symtab, strtab, shstr):
        offs.append(64 + len(body))
        body += blob + bytes((-len(blob)) % 8)
    shoff = 64 + len(body)
    sh = bytes(64)
    sh += struct.pack("<IIQQQQIIQQ", 1, 1, 6, TEXT_VA, offs[0], len(ISA), 0, 0, 16, 0)
    sh += struct.pack("<IIQQQQIIQQ", 7, 2, 0, 0, offs[1], len(symtab), 3, 1, 8, 24)
    sh += struct.pack("<IIQQQQIIQQ", 15, 3, 0, 0, offs[2], len(strtab), 0, 0, 1, 0)
    sh += struct.pack("<IIQQQQIIQQ", 23, 3, 0, 0, offs[3], len(shstr), 0, 0, 1, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 2, 205, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 5, 4)
    return eh + body + sh
