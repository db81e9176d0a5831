"""Vision jobs: timm and torchvision models with random weights on random images.

modes:
  vit-train      timm ViT-S/16 training at batch 64: healthy (run two at once for a shared GPU).
  compile        torchvision ResNet-18 training through torch.compile: healthy.
  capped-retry   ResNet-50 training capped just above its needs, with one evaluation pass at a
                 larger batch halfway: the allocator flushes its cache once and goes on: healthy.
  big-batch      timm ViT-B/16 training, then one step at batch 4096: more than the GPU -> OOM.
  capped-big     ResNet-18 capped at 4 GiB, then one step at batch 1024: over the cap -> OOM.
Run for RUN_S seconds (default 20)."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 20)
dev = torch.device("cuda")
torch.manual_seed(0)
t = wl.Torch()
wl.emit(ev="start", mode=mode, pid=os.getpid(), torch=torch.__version__)


def timm_model(name):
    import timm
    return timm.create_model(name, pretrained=False, num_classes=1000).to(dev)


def tv_model(name):
    import torchvision
    return getattr(torchvision.models, name)(weights=None).to(dev)


def step(model, opt, batch, train=True):
    x = torch.randn(batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    if train:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    else:
        with torch.no_grad():
            model(x)
    torch.cuda.synchronize()


def loop(model, batch, seconds, first=0, train=True):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    i = first
    for i in wl.run_for(seconds):
        try:
            step(model, opt, batch, train)
        except torch.OutOfMemoryError as e:
            t.oom(e)
        t.step(first + i, batch=batch)
    return opt, first + i + 1


if mode == "vit-train":
    loop(timm_model("vit_small_patch16_224"), 64, run_s)
elif mode == "compile":
    model = torch.compile(tv_model("resnet18"))
    loop(model, 128, run_s)
elif mode == "capped-retry":
    model = tv_model("resnet50")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        step(model, opt, 64)
    train_peak = torch.cuda.max_memory_reserved()
    step(model, opt, 192, train=False)
    eval_peak = torch.cuda.max_memory_reserved()
    torch.cuda.empty_cache()
    t.cap((max(train_peak, eval_peak) + (1 << 29)) / wl.GiB)
    wl.emit(ev="cap", limit=t.limit, train_peak=train_peak, eval_peak=eval_peak)
    half = run_s / 2
    _, n = loop(model, 64, half)
    _, n = loop(model, 192, 1.0, first=n, train=False)
    loop(model, 64, half, first=n)
elif mode == "big-batch":
    model = timm_model("vit_base_patch16_224")
    opt, n = loop(model, 64, run_s)
    try:
        step(model, opt, 4096)
    except torch.OutOfMemoryError as e:
        t.oom(e)
elif mode == "capped-big":
    t.cap(4)
    model = tv_model("resnet18")
    opt, n = loop(model, 32, run_s)
    try:
        step(model, opt, 1024)
    except torch.OutOfMemoryError as e:
        t.oom(e)
else:
    sys.exit(f"unknown mode {mode}")
wl.emit(ev="end", pid=os.getpid())
