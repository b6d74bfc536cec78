#!/usr/bin/python3
"""imagenet_set.py: an ImageNet-shaped JPEG folder for the input benchmark.

  imagenet_set.py OUT N [--classes C] [--seed S]

Writes OUT/nNNNNNNN/<i>.JPEG: N RGB JPEGs in C class folders (default 100)
of ImageNet's training-set shapes (ILSVRC-2012: about half of the images
are 500 pixels on the long side at 4:3 or 3:2, landscape three times as
often as portrait; the rest spread from 100 to 500 pixels, 2% larger, up
to 1600; mean width x height about 390 x 330 here) with a photograph's
spectrum (random phases under a 1/f^1.08 amplitude spectrum, a luminance
plane shared by the channels: ~85 KB a JPEG, ImageNet's average being
~110 KB), saved by PIL (libjpeg-turbo) at quality 90 with 4:2:0 chroma,
as most of ImageNet's Flickr JPEGs are.
Prints the count and the mean height and width. numpy and PIL only.
"""
import os
import sys

import numpy as np
from PIL import Image


def shape(rng):
    u = rng.random()
    if u < 0.50:  # the common case: long side 500
        long_, short = 500, int(rng.choice([375, 333, 375, 334, 400, 281]))
    elif u < 0.98:  # smaller images, any aspect
        long_ = int(rng.integers(100, 500))
        short = int(long_ * rng.uniform(0.55, 1.0))
    else:  # a few large ones
        long_ = int(rng.integers(600, 1600))
        short = int(long_ * rng.uniform(0.6, 0.8))
    h, w = (short, long_) if rng.random() < 0.75 else (long_, short)
    return max(h, 16), max(w, 16)


def natural(rng, h, w):
    """Random phases under a 1/f^1.08 amplitude spectrum, per channel and a
    shared luminance, scaled to a photograph's contrast."""
    H, W = -(-h // 64) * 64, -(-w // 64) * 64  # FFT-friendly sizes, cropped after
    fy = np.fft.fftfreq(H)[:, None].astype(np.float32)
    fx = np.fft.rfftfreq(W)[None, :].astype(np.float32)
    amp = np.maximum(np.hypot(fy, fx), 1.0 / max(H, W)) ** -1.08
    out = np.empty((h, w, 3), np.float32)
    planes = []
    for _ in range(4):
        spec = amp * np.exp(2j * np.pi * rng.random(amp.shape))
        p = np.fft.irfft2(spec, s=(H, W))[:h, :w]
        planes.append(p / p.std())
    for k in range(3):
        out[:, :, k] = 128 + 45 * planes[3] + 20 * planes[k]
    return np.clip(out, 0, 255).astype(np.uint8)


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    out, n = argv[0], int(argv[1])
    opts = dict(zip(argv[2::2], argv[3::2]))
    classes = int(opts.get("--classes", 100))
    rng = np.random.default_rng(int(opts.get("--seed", 1)))
    hs, ws = [], []
    for i in range(n):
        d = os.path.join(out, "n%08d" % (i % classes))
        os.makedirs(d, exist_ok=True)
        h, w = shape(rng)
        Image.fromarray(natural(rng, h, w), "RGB").save(
            os.path.join(d, "%06d.JPEG" % i), quality=90, subsampling=2)
        hs.append(h)
        ws.append(w)
    print("%d images, mean %.0f x %.0f (h x w)" % (n, sum(hs) / n, sum(ws) / n))


if __name__ == "__main__":
    main(sys.argv[1:])
