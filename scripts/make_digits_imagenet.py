#!/usr/bin/python3
"""Writes scikit-learn's handwritten digits as a small ImageNet-layout set.

The 1,797 8x8 grey digits that Debian's python3-sklearn ships are upscaled
(bilinear) to SIZE x SIZE, written as real RGB JPEGs by libjpeg-turbo
(through its C API, libturbojpeg.so.0) under OUT/train/<label>/ and
OUT/val/<label>/, and listed in OUT/train_list.txt and OUT/val_list.txt as
"relative/path.jpeg label" lines — the layout Flotilla's ImageNetReader and
Paddle's image-classification scripts read. Every fifth image of each class
goes to val. Nothing is downloaded. Files are written under a temporary name
and renamed, so an interrupted run leaves no half-written set.
"""
import argparse
import ctypes
import os
import shutil
import tempfile

import numpy as np
from sklearn.datasets import load_digits

TJPF_RGB = 0
TJSAMP_444 = 0


class TurboJpeg:
    """tjCompress2 from libjpeg-turbo, for RGB uint8 arrays."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libturbojpeg.so.0")
        self.lib.tjInitCompress.restype = ctypes.c_void_p
        self.lib.tjCompress2.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_ulong), ctypes.c_int, ctypes.c_int,
            ctypes.c_int]
        self.lib.tjFree.argtypes = [ctypes.c_void_p]
        self.lib.tjDestroy.argtypes = [ctypes.c_void_p]
        self.handle = self.lib.tjInitCompress()

    def close(self) -> None:
        """Frees the compressor (tjDestroy); encode() must not be called after."""
        self.lib.tjDestroy(self.handle)

    def encode(self, rgb: np.ndarray, quality: int = 95) -> bytes:
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        h, w, _ = rgb.shape
        buf, size = ctypes.c_void_p(), ctypes.c_ulong()
        rc = self.lib.tjCompress2(self.handle, rgb.ctypes.data, w, 0, h, TJPF_RGB, ctypes.byref(buf),
                                  ctypes.byref(size), TJSAMP_444, quality, 0)
        if rc != 0:
            raise RuntimeError("libjpeg-turbo could not encode an image")
        data = ctypes.string_at(buf, size.value)
        self.lib.tjFree(buf)
        return data


def upscale(img: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of an 8x8 array with values 0..16 to size x size, 0..255."""
    n = img.shape[0]
    src = (np.arange(size) + 0.5) * n / size - 0.5
    src = np.clip(src, 0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = src - lo
    rows = img[lo] * (1 - w)[:, None] + img[hi] * w[:, None]
    out = rows[:, lo] * (1 - w)[None, :] + rows[:, hi] * w[None, :]
    return np.clip(out * (255.0 / 16.0), 0, 255).astype(np.uint8)


def write_set(out: str, size: int) -> None:
    digits = load_digits()
    jpeg = TurboJpeg()
    staging = tempfile.mkdtemp(prefix=".digits-", dir=os.path.dirname(os.path.abspath(out)) or ".")
    lists = {"train": [], "val": []}
    seen = {}
    try:
        for i, (img, label) in enumerate(zip(digits.images, digits.target)):
            k = seen.get(label, 0)
            seen[label] = k + 1
            split = "val" if k % 5 == 4 else "train"
            rel = f"{split}/{label}/{i:05d}.jpeg"
            os.makedirs(os.path.join(staging, split, str(label)), exist_ok=True)
            grey = upscale(img, size)
            with open(os.path.join(staging, rel), "wb") as f:
                f.write(jpeg.encode(np.stack([grey] * 3, axis=-1)))
            lists[split].append(f"{rel} {label}\n")
    finally:
        jpeg.close()
    for split, lines in lists.items():
        with open(os.path.join(staging, f"{split}_list.txt"), "w") as f:
            f.writelines(lines)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.rename(staging, out)
    print(f"wrote {len(lists['train'])} train and {len(lists['val'])} val JPEGs ({size}x{size}) to {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="directory to create (replaced if it exists)")
    parser.add_argument("--size", type=int, default=32, help="image side in pixels (default 32)")
    args = parser.parse_args()
    write_set(args.out, args.size)


if __name__ == "__main__":
    main()
