# SPDX-License-Identifier: MIT
"""A stand-in for the little of PyTorch that scripts/device/torch_rate.py
uses, for tests/device/test_torch_rate.py: a "model" whose call sleeps,
twice as long when STUB_SLOW is set in the environment at the call (so a
run's environment is seen in its figure), and a CUDA start that fails
when STUB_FAIL is set, or with STUB_NO_FORK in a process forked after
the import (CUDA refuses a fork of a process that initialized it)."""
import os
import time

_IMPORTED_BY = os.getpid()


class _Module:
    def __init__(self, *args):
        self.args = args

    def cuda(self):
        return self

    def eval(self):
        return self

    def __call__(self, x):
        time.sleep(0.0002 * (2 if os.environ.get("STUB_SLOW") else 1))
        return x


class nn:
    Linear = ReLU = Sequential = _Module


class cuda:
    @staticmethod
    def synchronize():
        pass


class inference_mode:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def manual_seed(seed):
    pass


def randn(*shape, device=None):
    if os.environ.get("STUB_FAIL"):
        raise RuntimeError("CUDA error: no device (stub)")
    if os.environ.get("STUB_NO_FORK") and os.getpid() != _IMPORTED_BY:
        raise RuntimeError("Cannot re-initialize CUDA in forked subprocess (stub)")
    return shape
