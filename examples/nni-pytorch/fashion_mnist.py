"""A trial written for NNI: a small PyTorch CNN on Fashion-MNIST.

Nothing here knows aah. The trial takes its hyperparameters from
nni.get_next_parameter(), reports the test accuracy after every epoch with
nni.report_intermediate_result() and the last one with
nni.report_final_result(), as NNI's own examples do; it runs unchanged
under NNI or under aah (examples/nni-pytorch/README.md), with NNI's `nni`
package or the one aah ships.

It reads the IDX files of Fashion-MNIST (Debian's dataset-fashion-mnist:
/usr/share/datasets/fashion-mnist) and, to stay quick on a CPU, trains on
the first --train_samples images and tests on the first --test_samples of
the test set.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T

import nni

# Fashion-MNIST's mean and standard deviation over its training images
MEAN, STD = 0.2860, 0.3530


def read_idx(path, n):
    """The first n items of an IDX file (gzipped) as a numpy array."""
    with gzip.open(path, "rb") as f:
        zero, kind, dims = struct.unpack(">HBB", f.read(4))
        if zero != 0 or kind != 0x08:
            raise ValueError(f"{path}: not an IDX file of unsigned bytes")
        shape = list(struct.unpack(">" + "I" * dims, f.read(4 * dims)))
        shape[0] = min(shape[0], n)
        return np.frombuffer(f.read(int(np.prod(shape))), dtype=np.uint8).reshape(shape)


def load(data_dir, prefix, n):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), n)
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), n)
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)   # (N, 1, 28, 28)
    return T.Normalize((MEAN,), (STD,))(x), torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.fc1 = nn.Linear(2 * channels * 7 * 7, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default=os.environ.get("FASHION_MNIST",
                                                             "/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--train_samples", type=int, default=4000)
    parser.add_argument("--test_samples", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args, _ = parser.parse_known_args()

    params = {"lr": 0.05, "momentum": 0.9, "channels": 8, "hidden": 64, "batch_size": 64}
    params.update(nni.get_next_parameter() or {})
    print("parameters:", json.dumps(params, sort_keys=True), flush=True)

    torch.set_num_threads(args.threads)
    torch.manual_seed(nni.get_sequence_id())
    x_train, y_train = load(args.data_dir, "train", args.train_samples)
    x_test, y_test = load(args.data_dir, "t10k", args.test_samples)
    model = Net(int(params["channels"]), int(params["hidden"]))
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"], momentum=params["momentum"])
    batch = int(params["batch_size"])

    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        model.train()
        order = torch.randperm(len(x_train))
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
        acc = accuracy(model, x_test, y_test)
        print(f"epoch {epoch}: test accuracy {acc:.4f}, loss {loss.item():.4f}, "
              f"{time.time() - t0:.1f} s", flush=True)
        nni.report_intermediate_result(acc)
    nni.report_final_result(acc)


if __name__ == "__main__":
    main()
