"""uopc and numpy exchange arrays through DLPack (numpy.from_dlpack and __dlpack__).

Run by dlpack_numpy_test.sh with Debian's python3 and numpy (1.24: from_dlpack, no bool,
no bfloat16). argv[1]: the peer library (dlpack_numpy_peer.cc)."""
import ctypes
import gc
import sys

import numpy as np

lib = ctypes.CDLL(sys.argv[1])
lib.peer_export.restype = ctypes.c_void_p
lib.peer_export.argtypes = [ctypes.c_char_p]
lib.peer_import.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
lib.peer_read.restype = ctypes.c_int64
lib.peer_read.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int64]
capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_rename = ctypes.pythonapi.PyCapsule_SetName
capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


class Exported:
    """A uopc tensor as an object with the DLPack protocol (what numpy.from_dlpack takes)."""

    def __init__(self, managed):
        self.managed = managed

    def __dlpack__(self, stream=None):
        return capsule_new(self.managed, b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


failures = []


def check(what, ok):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# ---- uopc -> numpy ----
expect = (np.arange(6, dtype=np.float32) * 1.5 + 2).reshape(2, 3)
for name, dtype in [("f32", np.float32), ("f16", np.float16), ("i32", np.int32),
                    ("i64", np.int64), ("u8", np.uint8), ("f64", np.float64)]:
    managed = lib.peer_export(name.encode())
    data = DLTensor.from_address(managed).data
    deleted = lib.peer_deleted()
    a = np.from_dlpack(Exported(managed))
    check(f"export {name}: dtype {a.dtype}", a.dtype == dtype)
    check(f"export {name}: values", np.array_equal(a, expect.astype(dtype)))
    check(f"export {name}: numpy reads uopc's memory (no copy)",
          a.__array_interface__["data"][0] == data)
    check(f"export {name}: deleter not called while numpy holds it", lib.peer_deleted() == deleted)
    del a
    gc.collect()
    check(f"export {name}: deleter called once when numpy lets it go",
          lib.peer_deleted() == deleted + 1)


# ---- numpy -> uopc ----
def import_array(a):
    """Hands `a` to uopc as numpy's DLPack capsule; the error message, or None."""
    capsule = a.__dlpack__()
    managed = capsule_pointer(capsule, b"dltensor")
    capsule_rename(capsule, b"used_dltensor")  # uopc owns it now: it calls the deleter
    error = ctypes.create_string_buffer(512)
    return None if lib.peer_import(managed, error, 512) == 0 else error.value.decode()


def read(n):
    out = (ctypes.c_double * n)()
    got = lib.peer_read(out, n)
    return np.array(out[:got])


base = np.arange(12, dtype=np.float32).reshape(3, 4)
for what, view, shared in [("row-major", base, True), ("transposed", base.T, True),
                           ("every other column", base[:, ::2], False),
                           ("from the second row", base[1:], True)]:
    refs = sys.getrefcount(view)
    check(f"import {what}: accepted", import_array(view) is None)
    check(f"import {what}: numpy's array is {'held' if shared else 'let go at once'}",
          sys.getrefcount(view) == refs + shared)
    check(f"import {what}: values", np.array_equal(read(view.size), view.ravel()))
    saved = base[1, 2]
    base[1, 2] = 99
    check(f"import {what}: {'shares' if shared else 'copies'} numpy's memory",
          np.array_equal(read(view.size), view.ravel()) == shared)
    base[1, 2] = saved
    lib.peer_release()
    gc.collect()
    check(f"import {what}: numpy's deleter called once (refcount {sys.getrefcount(view)}, "
          f"was {refs})", sys.getrefcount(view) == refs)

for dtype in [np.float16, np.int32, np.int64, np.float64]:
    a = (np.arange(5) - 2).astype(dtype)
    check(f"import {np.dtype(dtype).name}", import_array(a) is None and
          np.array_equal(read(5), a.astype(np.float64)))
    lib.peer_release()

error = import_array(np.zeros(2, dtype=np.complex64))
check(f"import complex64 refused: {error}", error is not None and "dtype" in error)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
