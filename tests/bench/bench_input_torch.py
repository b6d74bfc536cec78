#!/usr/bin/python3
"""bench_input_torch.py: torchvision's ImageNet training input on one core.

  bench_input_torch.py DIR SIZE

Every JPEG of the folder DIR (DIR/<class>/*, sorted) through what
torchvision's ImageNet reference script does per training image: PIL
open + convert("RGB") (libjpeg-turbo, full size), RandomResizedCrop(SIZE)
(area 8%-100%, aspect 3/4-4/3, bilinear with antialias, as PIL resizes),
RandomHorizontalFlip, ToTensor, Normalize(ImageNet mean and std): the
float CHW tensor a model takes, as aah's loader makes a float HWC sample.
One process, one torch thread (torch.set_num_threads(1)), so images/s is
per core. Prints images/s and CPU milliseconds per image (user + system of
this process), the figures bench_data prints.
"""
import os
import sys
import time

import torch
from PIL import Image
from torchvision import transforms


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    root, size = argv[0], int(argv[1])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    files = [os.path.join(root, c, f) for c in sorted(os.listdir(root))
             for f in sorted(os.listdir(os.path.join(root, c)))]
    tf = transforms.Compose([
        transforms.RandomResizedCrop(size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    t0, c0 = time.monotonic(), time.process_time()
    sink = 0.0
    for p in files:
        with open(p, "rb") as f:
            img = Image.open(f).convert("RGB")
        x = tf(img)
        sink += float(x[0, 0, 0])
    dt, cpu = time.monotonic() - t0, time.process_time() - c0
    print("%.1f torchvision 0 %.2f" % (len(files) / dt, 1e3 * cpu / len(files)))


if __name__ == "__main__":
    main(sys.argv[1:])
