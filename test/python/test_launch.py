"""Loading and launching through the Python package against the fake CUDA
driver (test/unit/FakeCuda: host memory, kernels run on the host), with
arrays that expose __cuda_array_interface__ over the fake's allocations."""

import ctypes
import struct

import pytest

import kopt
from conftest import ROOT, fake_cuda

pytestmark = pytest.mark.skipif(not fake_cuda(), reason="needs the fake CUDA "
                                "driver (run through CTest: python.pytest)")

OK = ROOT / "test" / "unit" / "Inputs" / "fake" / "ok.json"


class DeviceArray:
    """A minimal __cuda_array_interface__ array in (fake) device memory."""
    _cuda = None

    def __init__(self, shape, typestr="<f4", ptr=None, strides=None, nbytes=None):
        if DeviceArray._cuda is None:
            DeviceArray._cuda = ctypes.CDLL("libcuda.so.1")
        itemsize = int(typestr[2:])
        n = 1
        for d in shape:
            n *= d
        self.nbytes = nbytes or n * itemsize
        if ptr is None:
            p = ctypes.c_ulonglong()
            assert DeviceArray._cuda.cuMemAlloc_v2(ctypes.byref(p),
                                                   ctypes.c_size_t(self.nbytes)) == 0
            ptr = p.value
        self.ptr = ptr
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "version": 3,
                                         "strides": strides}

    def fill(self, values):
        data = struct.pack(f"{len(values)}f", *values)
        ctypes.memmove(self.ptr, data, len(data))

    def read(self, count):
        return list(struct.unpack(f"{count}f", ctypes.string_at(self.ptr, 4 * count)))


@pytest.fixture
def module():
    with kopt.load(OK) as m:
        yield m


def test_functions_and_args(module):
    assert list(module.functions) == ["forward"]
    fn = module.forward
    assert [(a.name, a.role, a.dtype, a.shape) for a in fn.args] == [
        ("arg0", "input", "f32", (64, 128)), ("arg1", "input", "f32", (128,)),
        ("out0", "output", "f32", (64, 128))]
    assert fn.workspace_bytes == 0
    assert "forward" in repr(fn)
    with pytest.raises(KeyError, match="has: forward"):
        module["backward"]


def test_kernel_resources(module):
    r = module.kernel_resources("add_bcast_f32")
    assert r["registers"] == 32 and r["max_threads_per_block"] == 1024
    with pytest.raises(kopt.LaunchError, match="no kernel named 'nope'"):
        module.kernel_resources("nope")


def test_launch_computes(module):
    x, b, y = DeviceArray((64, 128)), DeviceArray((128,)), DeviceArray((64, 128))
    x.fill([float(i % 7) for i in range(64 * 128)])
    b.fill([0.5 * i for i in range(128)])
    out = module.forward(x, b, out=y)
    assert out is y
    got = y.read(64 * 128)
    assert got[:3] == [0.0 + 0.0, 1.0 + 0.5, 2.0 + 1.0]
    assert got[130] == float(130 % 7) + 0.5 * 2


def test_bad_arrays_are_refused_before_launch(module):
    x, b, y = DeviceArray((64, 128)), DeviceArray((128,)), DeviceArray((64, 128))
    fn = module.forward
    with pytest.raises(TypeError, match="takes 2 inputs"):
        fn(x, out=y)
    with pytest.raises(ValueError, match=r"shape \[128, 64\], expected \[64, 128\]"):
        fn.launch([DeviceArray((128, 64)), b, y])
    with pytest.raises(TypeError, match="dtype f16, expected f32"):
        fn.launch([DeviceArray((64, 128), "<f2"), b, y])
    with pytest.raises(ValueError, match="not contiguous"):
        fn.launch([DeviceArray((64, 128), strides=(4, 256)), b, y])
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        fn.launch([DeviceArray((64, 128), ptr=x.ptr + 4), b, y])
    with pytest.raises(ValueError, match="null data pointer"):
        fn.launch([DeviceArray((64, 128), ptr=0), b, y])
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        fn.launch([[1.0, 2.0], b, y])
    with pytest.raises(kopt.LaunchError, match="cuStreamGetCtx"):
        fn.launch([x, b, y], stream=0x1234)
    with pytest.raises(TypeError, match="stream"):
        fn.launch([x, b, y], stream="default")
    with pytest.raises(TypeError, match="cannot allocate outputs"):
        fn(x, b)


def test_closed_module_is_refused():
    m = kopt.load(OK)
    m.close()
    m.close()  # twice is fine
    x, b, y = DeviceArray((64, 128)), DeviceArray((128,)), DeviceArray((64, 128))
    with pytest.raises(kopt.LaunchError, match="the module is closed"):
        m.functions["forward"].launch([x, b, y])


def test_close_waits_for_launches_in_flight():
    # close() on one thread while others launch: never a use after free.
    import threading
    for _ in range(10):
        m = kopt.load(OK)
        x, b, y = DeviceArray((64, 128)), DeviceArray((128,)), DeviceArray((64, 128))
        errors = []

        def loop():
            for _ in range(50):
                try:
                    m.forward.launch([x, b, y])
                except kopt.LaunchError as e:
                    assert "closed" in str(e)
                    return
                except Exception as e:  # noqa: BLE001
                    errors.append(e)
                    return
        threads = [threading.Thread(target=loop) for _ in range(4)]
        for t in threads:
            t.start()
        m.close()
        for t in threads:
            t.join()
        assert errors == []


def test_out_of_range_values_are_refused(module):
    x, b, y = DeviceArray((64, 128)), DeviceArray((128,)), DeviceArray((64, 128))
    fn = module.forward
    with pytest.raises(ValueError, match="not a 64-bit device address"):
        fn.launch([DeviceArray((64, 128), ptr=-16), b, y])
    with pytest.raises(ValueError, match="not a 64-bit device address"):
        fn.launch([DeviceArray((64, 128), ptr=1 << 70), b, y])
    with pytest.raises(ValueError, match="not a CUstream handle"):
        fn.launch([x, b, y], stream=1 << 70)
    with pytest.raises(ValueError, match="not contiguous"):
        fn.launch([DeviceArray((64, 128), strides=(512,)), b, y])
    ro = DeviceArray((64, 128))
    ro.__cuda_array_interface__["data"] = (ro.ptr, True)
    with pytest.raises(ValueError, match="read-only"):
        fn.launch([x, b, ro])
    bad = DeviceArray((64, 128))
    del bad.__cuda_array_interface__["data"]
    with pytest.raises(TypeError, match="malformed __cuda_array_interface__"):
        fn.launch([bad, b, y])
    with pytest.raises(TypeError, match="list or tuple"):
        fn.launch(None)
    with pytest.raises(ValueError, match="out of range"):
        kopt.load(OK, device=1 << 40)
    with pytest.raises(TypeError, match="must be an int"):
        kopt.load(OK, device="0")


def test_bad_manifests(tmp_path):
    with pytest.raises(kopt.LaunchError, match="nonexistent"):
        kopt.load(tmp_path / "nonexistent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(kopt.LaunchError, match="bad.json"):
        kopt.load(bad)
    with pytest.raises(TypeError):
        kopt.load(3.5)
    with pytest.raises(kopt.LaunchError, match="device 9"):
        kopt.load(OK, device=9)


def test_compiled_module_whose_kernels_the_driver_lacks():
    # A real compile loaded on the fake driver: its kernels are not among the
    # fake's, so loading names the first missing one.
    compiled = kopt.compile(ROOT / "examples" / "vocab_softmax.mlir")
    with pytest.raises(kopt.LaunchError, match=compiled.kernels[0]):
        compiled.load(0)
