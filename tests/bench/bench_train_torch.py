#!/usr/bin/python3
"""The PyTorch side of bench_train.sh: builds the network of an aah-arch/1
file (same layers, NHWC semantics, TensorFlow-style 'same' padding), then
either times training steps (--mode bench) or trains on Fashion-MNIST
(--mode train) with the schedule aah-trial uses, for comparisons."""
import argparse, gzip, json, math, sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def window(in_size, k, s, same):
    if same:
        out = (in_size + s - 1) // s
        total = max((out - 1) * s + k - in_size, 0)
        return out, total // 2, total - total // 2
    return (in_size - k) // s + 1, 0, 0


class Net(nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.arch = arch
        shapes = {"input": (arch["input"]["channels"], arch["input"]["height"], arch["input"]["width"])}
        self.order, self.mods, self.pads = [], nn.ModuleDict(), {}
        layers = {l["id"]: l for l in arch["layers"]}
        done = {"input"}
        while len(self.order) < len(layers):
            for lid, l in layers.items():
                if lid in done or not all(i in done for i in l["inputs"]):
                    continue
                c, h, w = shapes[l["inputs"][0]]
                t = l["type"]
                if t in ("conv2d", "maxpool", "avgpool"):
                    k = l["kernel"]
                    s = l.get("stride", 1 if t == "conv2d" else k)
                    same = l.get("padding", "same" if t == "conv2d" else "valid") == "same"
                    oh, pt, pb = window(h, k, s, same)
                    ow, pl, pr = window(w, k, s, same)
                    sym = pt == pb and pl == pr
                    pad = (pt, pl) if sym else (0, 0)
                    self.pads[lid] = None if sym else (pl, pr, pt, pb)
                    if t == "conv2d":
                        self.mods[lid] = nn.Conv2d(c, l["filters"], k, s, pad, bias=l.get("bias", True))
                        c = l["filters"]
                    elif t == "maxpool":
                        self.mods[lid] = nn.MaxPool2d(k, s, pad)
                    else:
                        self.mods[lid] = nn.AvgPool2d(k, s, pad, count_include_pad=False)
                    shapes[lid] = (c, oh, ow)
                elif t == "batchnorm":
                    self.mods[lid] = nn.BatchNorm2d(c, eps=l.get("epsilon", 1e-5), momentum=1 - l.get("momentum", 0.9))
                    shapes[lid] = (c, h, w)
                elif t == "dense":
                    self.mods[lid] = nn.Linear(c * h * w, l["units"], bias=l.get("bias", True))
                    shapes[lid] = (l["units"], 1, 1)
                elif t == "dropout":
                    self.mods[lid] = nn.Dropout(l["rate"])
                    shapes[lid] = (c, h, w)
                elif t in ("global_avg_pool",):
                    shapes[lid] = (c, 1, 1)
                elif t == "flatten":
                    shapes[lid] = (c * h * w, 1, 1)
                elif t == "concat":
                    shapes[lid] = (sum(shapes[i][0] for i in l["inputs"]), h, w)
                else:
                    shapes[lid] = (c, h, w)
                self.order.append(l)
                done.add(lid)

    def forward(self, x):
        vals = {"input": x}
        for l in self.order:
            lid, t = l["id"], l["type"]
            a = vals[l["inputs"][0]]
            if lid in self.mods:
                if self.pads.get(lid):
                    fill = -math.inf if t == "maxpool" else 0.0
                    a = F.pad(a, self.pads[lid], value=fill)
                if t == "dense" and a.dim() > 2:
                    a = a.flatten(1)
                y = self.mods[lid](a)
            elif t == "relu":
                y = F.relu(a)
            elif t == "add":
                y = a
                for i in l["inputs"][1:]:
                    y = y + vals[i]
            elif t == "concat":
                y = torch.cat([vals[i] for i in l["inputs"]], 1)
            elif t == "global_avg_pool":
                y = a.mean((2, 3))
            elif t == "flatten":
                # NHWC order, as aah flattens
                y = a.permute(0, 2, 3, 1).flatten(1) if a.dim() == 4 else a
            vals[lid] = y
        return vals[self.arch["output"]]


def load_idx(d, split):
    pre = "train" if split == "train" else "t10k"
    with gzip.open(f"{d}/{pre}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(f"{d}/{pre}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (x.astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", required=True)
    p.add_argument("--mode", choices=["bench", "train"], default="bench")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--device", default="cpu",
                   help="bench mode: cpu, or cuda (channels_last)")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="bench mode on cuda: fp32 (TF32 off, as aah's cuda backend), or AMP "
                        "autocast in bf16, or fp16 with a GradScaler")
    p.add_argument("--compile", action="store_true",
                   help="bench mode: torch.compile the network (falls back, saying so, where "
                        "it fails)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    arch = json.load(open(a.arch))
    net = Net(arch)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    ic = arch["input"]
    if a.mode == "bench":
        dev = torch.device(a.device)
        x = torch.randn(a.batch, ic["channels"], ic["height"], ic["width"])
        y = torch.randint(0, arch["num_classes"], (a.batch,))
        if dev.type == "cuda":
            # fp32 as aah's cuda backend computes it: no TF32
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
            net = net.to(dev, memory_format=torch.channels_last)
            x = x.to(dev, memory_format=torch.channels_last)
            y = y.to(dev)
            opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
        amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
        # torch.cuda.amp's: also in Debian's torch 1.13, which the CPU bench uses
        scaler = torch.cuda.amp.GradScaler() if a.precision == "fp16" else None
        step_net = net
        if a.compile:
            try:
                step_net = torch.compile(net)
            except Exception as e:  # an old torch, or no compiler for this device
                print(f"torch.compile failed, eager: {e}", file=sys.stderr)
        net.train()
        for i in range(a.warmup + a.steps):
            if i == a.warmup:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            opt.zero_grad()
            if amp is None:
                loss = loss_fn(step_net(x), y)
            else:
                with torch.autocast(dev.type, dtype=amp):
                    loss = loss_fn(step_net(x), y)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        print(f"{a.batch * a.steps / dt:.1f}")
        return
    xtr, ytr = load_idx(a.data, "train")
    xva, yva = load_idx(a.data, "test")
    steps = len(xtr) // a.batch
    total = steps * a.epochs
    t = 0
    for ep in range(a.epochs):
        net.train()
        perm = torch.randperm(len(xtr))
        for b in range(steps):
            lr = 0.5 * a.lr * (1 + math.cos(math.pi * t / (total - 1)))
            for g in opt.param_groups:
                g["lr"] = lr
            idx = perm[b * a.batch:(b + 1) * a.batch]
            opt.zero_grad()
            loss_fn(net(xtr[idx]), ytr[idx]).backward()
            opt.step()
            t += 1
        net.eval()
        with torch.no_grad():
            acc = sum((net(xva[i:i + 1000]).argmax(1) == yva[i:i + 1000]).sum().item() for i in range(0, len(xva), 1000)) / len(xva)
        print(f"epoch {ep + 1}: val_acc {acc:.4f}", flush=True)


if __name__ == "__main__":
    main()
