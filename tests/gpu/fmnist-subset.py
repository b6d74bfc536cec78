#!/usr/bin/env python3
"""fmnist-subset.py SRC DEST NTRAIN NTEST: the first NTRAIN training and
NTEST test samples of Fashion-MNIST's IDX files in SRC, gzipped into DEST
under the same names, so that aah-trial trains on them as on the whole set.
lease.sh --collect carries them to the device machine, which has no
Fashion-MNIST."""
import gzip, os, struct, sys


def subset(src, dest, name, count):
    with gzip.open(os.path.join(src, name + ".gz"), "rb") as f:
        data = f.read()
    dims = data[3]
    shape = list(struct.unpack(">%dI" % dims, data[4:4 + 4 * dims]))
    if shape[0] < count:
        sys.exit("fmnist-subset: %s has %d samples, fewer than %d" % (name, shape[0], count))
    per = 1
    for d in shape[1:]:
        per *= d
    head = data[:4] + struct.pack(">%dI" % dims, count, *shape[1:])
    body = data[4 + 4 * dims:4 + 4 * dims + count * per]
    with gzip.open(os.path.join(dest, name + ".gz"), "wb", compresslevel=9) as f:
        f.write(head + body)


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: fmnist-subset.py SRC DEST NTRAIN NTEST")
    src, dest, ntrain, ntest = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(dest, exist_ok=True)
    for pre, n in (("train", ntrain), ("t10k", ntest)):
        subset(src, dest, pre + "-images-idx3-ubyte", n)
        subset(src, dest, pre + "-labels-idx1-ubyte", n)


main()
