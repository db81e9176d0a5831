"""Language-model jobs built from transformers configs with random weights (nothing downloaded).

modes:
  gpt2-fixed    GPT-2 (6 layers) training, fixed batch and sequence length: healthy.
  gpt2-varlen   GPT-2 training with variable batch and a sequence length that grows (a curriculum):
                PyTorch's cache grows while allocated memory stays flat: healthy.
  gpt2-leak     GPT-2 training capped at CAP_GIB (9.5) that keeps every step's logits (for a metric
                computed later): allocated climbs to the cap (LEAK_S seconds, 40) -> OOM.
  gpt2-growing  GPT-2 training whose sequence length grows; the victim of a second process (F5).
  llama-amp     a Llama-style decoder under bf16 autocast: healthy.
  bert-loader   BERT masked-LM training fed by a DataLoader with 2 worker processes: healthy.
  kv-infer      GPT-2 inference whose KV cache grows token by token, request after request: healthy.
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


def gpt2(layers=6, positions=1024):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=layers, n_embd=768, n_head=12, n_positions=positions)
    return GPT2LMHeadModel(cfg).to(dev), cfg.vocab_size


def train(model, vocab, shapes, keep=None, pace=None):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i in wl.run_for(run_s):
        b, s = shapes(i)
        ids = torch.randint(0, vocab, (b, s), device=dev)
        try:
            out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if keep is not None:
                keep.append(out.logits)  # the bug: every step's logits stay on the GPU
            del out
            torch.cuda.synchronize()
        except torch.OutOfMemoryError as e:
            t.oom(e)
        t.step(i, batch=b, seq=s)
        if pace:
            pace(i)


if mode == "gpt2-fixed":
    model, vocab = gpt2()
    train(model, vocab, lambda i: (16, 512))
elif mode == "gpt2-varlen":
    import random
    rnd = random.Random(1)
    model, vocab = gpt2()
    start = time.time()

    def shapes(i):
        top = 128 + int(896 * min(1.0, (time.time() - start) / (run_s * 0.8)))
        return rnd.choice([4, 6, 8, 12, 16]), rnd.randint(64, top)
    train(model, vocab, shapes)
elif mode == "gpt2-growing":
    model, vocab = gpt2()
    start = time.time()
    train(model, vocab, lambda i: (16, min(1024, 256 + 16 * i)), pace=lambda i: time.sleep(0.3))
elif mode == "gpt2-leak":
    t.cap(wl.env_f("CAP_GIB", 9.5))
    model, vocab = gpt2()
    kept = []
    leak_s = wl.env_f("LEAK_S", 40)
    state = {}

    def pace(i):
        # Hold the leak to a steady rate that reaches the cap in about LEAK_S seconds.
        a = t.figures()["allocated"]
        if i == 0:
            state["a0"], state["t0"] = a, time.time()
            return
        if i == 1:
            per_step = max(1, a - state["a0"])
            room = t.limit - a
            state["period"] = leak_s / max(1.0, room / per_step)
        time.sleep(max(0.0, state["period"] - (time.time() - state.setdefault("last", time.time()))))
        state["last"] = time.time()
    run_s = 10 * leak_s
    train(model, vocab, lambda i: (8, 256), keep=kept, pace=pace)
elif mode == "llama-amp":
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                      max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i in wl.run_for(run_s):
        ids = torch.randint(0, cfg.vocab_size, (8, 512), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t.step(i)
elif mode == "bert-loader":
    from transformers import BertConfig, BertForMaskedLM

    class Tokens(torch.utils.data.Dataset):
        def __len__(self):
            return 1 << 20

        def __getitem__(self, k):
            g = torch.Generator().manual_seed(k)
            n = int(torch.randint(32, 256, (1,), generator=g))
            ids = torch.zeros(256, dtype=torch.long)
            ids[:n] = torch.randint(1000, 30000, (n,), generator=g)
            return ids

    cfg = BertConfig(hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                     intermediate_size=2048)
    model = BertForMaskedLM(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=64, num_workers=2)
    end = time.time() + run_s
    for i, ids in enumerate(loader):
        if time.time() >= end:
            break
        ids = ids.to(dev, non_blocking=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t.step(i)
elif mode == "kv-infer":
    model, vocab = gpt2(layers=12, positions=2048)
    model.eval()
    i = 0
    end = time.time() + run_s
    with torch.no_grad():
        while time.time() < end:
            ids = torch.randint(0, vocab, (8, 128), device=dev)
            out = model(input_ids=ids, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
            for _ in range(768):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
                if time.time() >= end:
                    break
            torch.cuda.synchronize()
            t.step(i, tokens=past.get_seq_length() if hasattr(past, "get_seq_length") else None)
            del past, out
            i += 1
else:
    sys.exit(f"unknown mode {mode}")
wl.emit(ev="end", pid=os.getpid())
