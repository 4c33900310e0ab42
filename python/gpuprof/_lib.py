# SPDX-License-Identifier: MIT
"""ctypes bindings of libgpuprof-client.so.0 (include/gpuprof/client.h).

Only the calls the module needs are declared. Strings the library returns
through char ** are malloc()ed: they are read into Python bytes and given
back with libc's free(), never with ctypes' own allocator.
"""

import ctypes
import errno
import os

SONAME = "libgpuprof-client.so.0"
# Overrides the library's location, e.g. a build tree's copy.
LIB_ENV = "GPUPROF_CLIENT_LIB"

_lib = None
_free = None


def _load():
    global _lib, _free
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(os.environ.get(LIB_ENV) or SONAME, use_errno=True)
    c_client = ctypes.c_void_p
    c_out = ctypes.POINTER(ctypes.c_void_p)

    lib.gpuprof_client_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(c_client)]
    lib.gpuprof_client_connect.restype = ctypes.c_int
    lib.gpuprof_client_free.argtypes = [c_client]
    lib.gpuprof_client_free.restype = None
    lib.gpuprof_client_set_timeout.argtypes = [c_client, ctypes.c_int]
    lib.gpuprof_client_set_timeout.restype = None
    lib.gpuprof_client_call.argtypes = [c_client, ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_int), ctypes.c_size_t, c_out]
    lib.gpuprof_client_call.restype = ctypes.c_int
    lib.gpuprof_call_with_output.argtypes = [c_client, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_int, c_out]
    lib.gpuprof_call_with_output.restype = ctypes.c_int
    lib.gpuprof_call_with_input.argtypes = [c_client, ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.c_int, c_out]
    lib.gpuprof_call_with_input.restype = ctypes.c_int
    lib.gpuprof_client_error_code.argtypes = [c_client]
    lib.gpuprof_client_error_code.restype = ctypes.c_int
    lib.gpuprof_client_error_message.argtypes = [c_client]
    lib.gpuprof_client_error_message.restype = ctypes.c_char_p
    lib.gpuprof_client_error_data.argtypes = [c_client]
    lib.gpuprof_client_error_data.restype = ctypes.c_char_p
    lib.gpuprof_parse_duration_ms.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
    lib.gpuprof_parse_duration_ms.restype = ctypes.c_int

    # The process's own free(): the one the library's malloc() pairs with
    # (ASan's when the library is a sanitizer build and ASan is preloaded).
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None
    _free = libc.free
    _lib = lib
    return lib


def take_string(ptr):
    """The text of a char * the library malloc()ed, then free it."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        _free(ptr)


def check_errno(r, what):
    """Raise OSError for a negative errno other than a remote error."""
    if r < 0:
        code = -r
        raise OSError(code, "%s: %s" % (what, os.strerror(code)))
    return r


EREMOTEIO = errno.EREMOTEIO
