#!/usr/bin/env python3
"""The benchmark runners' kopt path through the Python package, against the fake
CUDA driver of test/unit/FakeCuda (host memory; kernels run on the host): the
worker's kopt_function (kopt.load of a problem's manifest, the kernel information
with the driver's registers) and kopt_call (Function.launch with the workspace
zeroed once), on the fake's elementwise manifest and on its TMA manifest (two
matmul kernels with tensor maps, one with a split-K workspace: the runtime encodes
the maps at the first launch only while the addresses stay), with arrays that
expose __cuda_array_interface__ over the fake's allocations and a stand-in for the
few torch calls the two methods make.

    KOPT_LIBRARY=build/lib/libkopt.so PYTHONPATH=python \\
    LD_LIBRARY_PATH=<folder of the fake libcuda.so.1> python3 bench/test_package_launch.py
    (CTest: bench-package-launch)
"""
import ctypes
import json
import os
import shutil
import struct
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FAKE = os.path.join(ROOT, "test", "unit", "Inputs", "fake")
sys.path.insert(0, HERE)
import kopt_suite as ks  # noqa: E402
import suite_worker  # noqa: E402

kopt = ks.import_kopt()


def cuda():
    return ctypes.CDLL("libcuda.so.1")


class Tensor:
    """A stand-in for a contiguous torch CUDA tensor in the fake driver's memory."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.is_cuda, self.device = True, type("device", (), {"index": 0})()
        n = 1
        for d in shape:
            n *= d
        self._n, self.nbytes = n, n * dtype.itemsize
        p = ctypes.c_ulonglong()
        assert cuda().cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(self.nbytes)) == 0
        self.ptr = p.value

    def data_ptr(self):
        return self.ptr

    def is_contiguous(self):
        return True

    def numel(self):
        return self._n

    def element_size(self):
        return self.dtype.itemsize

    def fill_bytes(self, data):
        assert len(data) == self.nbytes
        ctypes.memmove(self.ptr, data, len(data))

    def floats(self):
        return list(struct.unpack(f"{self._n}f", ctypes.string_at(self.ptr, self.nbytes)))


def fake_torch_module():
    """A `torch` module with what the package (python/kopt/runtime.py) and the
    worker's kopt_function / kopt_call use: Tensor, the dtypes, zeros, and
    cuda.current_device / current_stream (a stream of the fake driver)."""
    t = types.ModuleType("torch")
    t.Tensor = Tensor
    for name, size in (("float32", 4), ("float16", 2), ("bfloat16", 2), ("uint8", 1)):
        setattr(t, name, type(name, (), {"itemsize": size})())
    stream = ctypes.c_void_p()
    assert cuda().cuStreamCreate(ctypes.byref(stream), 0) == 0
    t.stream_handle = stream.value or 0

    class cuda_ns:
        @staticmethod
        def current_device():
            return 0

        @staticmethod
        def current_stream(device=None):
            return type("Stream", (), {"cuda_stream": t.stream_handle})()
    t.cuda = cuda_ns

    def zeros(n, dtype, device):
        assert device == "cuda"
        x = Tensor((n,), dtype)
        x.fill_bytes(bytes(x.nbytes))
        return x
    t.zeros = zeros
    return t


def fake_worker(ptx_dir):
    w = suite_worker.Worker.__new__(suite_worker.Worker)
    w.torch, w.kopt = sys.modules["torch"], kopt
    w.plan = {"ptx_dir": ptx_dir}
    w.comp_record = {"problems_dir": "problems"}
    return w


def problem_dir(tmp, manifest, name):
    """A compile_suite.py folder holding the fake's manifest as problem `name`."""
    d = os.path.join(tmp, "problems")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(FAKE, manifest)) as f:
        m = json.load(f)
    m["functions"][0]["name"] = name
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump(m, f)
    shutil.copyfile(os.path.join(FAKE, m["ptx"]), os.path.join(d, m["ptx"]))
    return m


def encode_count():
    fn = cuda().koptFakeTensorMapEncodeCount
    fn.restype = ctypes.c_size_t
    return fn()


@unittest.skipUnless(os.environ.get("KOPT_FAKE_CUDA") == "1",
                     "needs the fake CUDA driver (run through CTest: bench-package-launch)")
class PackageLaunch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.saved = sys.modules.get("torch")
        sys.modules["torch"] = cls.torch = fake_torch_module()

    @classmethod
    def tearDownClass(cls):
        if cls.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = cls.saved

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kopt-bench-launch-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_elementwise(self):
        t = self.torch
        problem_dir(self.tmp, "ok.json", "bias_add")
        w = fake_worker(self.tmp)
        mod, fn, mfn, info = w.kopt_function({"name": "bias_add"})
        self.assertEqual([l["kernel"] for l in mfn["launches"]], ["add_bcast_f32"])
        self.assertEqual(info, [{"name": "add_bcast_f32", "op": "add", "class": "elementwise",
                                 "grid": [32, 1, 1], "block": [256, 1, 1],
                                 "cluster": [1, 1, 1],
                                 "dynamic_shared_bytes": 0, "registers": 32,
                                 "local_bytes": 0, "static_shared_bytes": 0}])
        x, b, y = Tensor((64, 128), t.float32), Tensor((128,), t.float32), \
            Tensor((64, 128), t.float32)
        x.fill_bytes(struct.pack("8192f", *[float(i % 5) for i in range(8192)]))
        b.fill_bytes(struct.pack("128f", *[0.25 * i for i in range(128)]))
        y.fill_bytes(struct.pack("8192f", *[float("nan")] * 8192))  # poisoned
        call, ws = w.kopt_call(fn, [x, b, y])
        self.assertIsNone(ws)
        call()
        got = y.floats()
        self.assertEqual(got[:3], [0.0, 1.25, 2.5])
        self.assertEqual(got[8191], float(8191 % 5) + 0.25 * 127)
        # The package refuses a tensor that is not the manifest's, before launching.
        with self.assertRaisesRegex(ValueError, r"shape \[128, 64\], expected \[64, 128\]"):
            w.kopt_call(fn, [Tensor((128, 64), t.float32), b, y])[0]()
        with self.assertRaisesRegex(TypeError, "dtype f16, expected f32"):
            w.kopt_call(fn, [Tensor((64, 128), t.float16), b, y])[0]()
        # On torch's current stream: a stream the fake does not know is refused.
        saved, t.stream_handle = t.stream_handle, 0x1234
        try:
            with self.assertRaisesRegex(kopt.LaunchError, "cuStreamGetCtx"):
                call()
        finally:
            t.stream_handle = saved
        del mod

    def test_tensor_maps_and_split_k_workspace(self):
        t = self.torch
        problem_dir(self.tmp, "tma.json", "gemm")
        w = fake_worker(self.tmp)
        mod, fn, mfn, info = w.kopt_function({"name": "gemm"})
        self.assertEqual([k["name"] for k in info],
                         ["matmul_tma_bf16", "matmul_tma_splitk_bf16"])
        self.assertEqual(info[0]["dynamic_shared_bytes"], 98304)
        self.assertGreaterEqual(fn.workspace_bytes, 2592 * 4)
        a, b = Tensor((32, 48), t.bfloat16), Tensor((40, 48), t.bfloat16)
        one = b"\x80\x3f"  # bf16 1.0
        a.fill_bytes(one * (32 * 48))
        b.fill_bytes(one * (40 * 48))
        c0, c1 = Tensor((32, 40), t.float32), Tensor((32, 40), t.float32)

        def poison():
            for c in (c0, c1):
                c.fill_bytes(struct.pack("1280f", *[float("nan")] * 1280))
        poison()
        call, ws = w.kopt_call(fn, [a, b, c0, c1])
        self.assertEqual(ws.nbytes, fn.workspace_bytes)
        before = encode_count()
        call()
        self.assertEqual(encode_count() - before, 4, "2 kernels x 2 maps, once")
        self.assertEqual(set(c0.floats()), {48.0})
        self.assertEqual(set(c1.floats()), {48.0})
        # The timed calls: same addresses, nothing encoded again; the split-K
        # workspace is left zero by the kernel (not zero-filled per call).
        poison()
        call()
        call()
        self.assertEqual(encode_count() - before, 4)
        self.assertEqual(set(c1.floats()), {48.0})
        del mod


if __name__ == "__main__":
    unittest.main()
